-- PostgreSQL twin of migrations/sqlite/0013.
alter table execution add column egress text collate "C";
