-- The history's filter menus list the providers and statuses that occur in the history. With
-- these indexes each distinct value is one index seek (a loose index scan), so the menus cost
-- the same with 100 000 rows as with ten.
create index execution_provider on execution (provider);
create index execution_status on execution (status);
