-- PostgreSQL twin of migrations/sqlite/0020.
alter table environment add column base text collate "C" not null default '';
