-- PostgreSQL twin of migrations/sqlite/0019.
alter table environment_build add column owner text collate "C" not null default '';
