-- PostgreSQL twin of migrations/sqlite/0018.
alter table execution add column row_key text collate "C";
create unique index execution_row_key on execution (row_key);
