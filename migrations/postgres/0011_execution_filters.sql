-- PostgreSQL twin of migrations/sqlite/0011.
create index execution_provider on execution (provider);
create index execution_status on execution (status);
