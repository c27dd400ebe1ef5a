-- PostgreSQL twin of migrations/sqlite/0017.
alter table execution add column replica text collate "C" not null default '';
create index execution_replica on execution (replica);
