-- PostgreSQL twin of migrations/sqlite/0007.
alter table execution add column code text collate "C";
alter table execution add column stdout text collate "C";
alter table execution add column stderr text collate "C";
