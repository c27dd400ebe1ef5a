-- A history row's own key, given by the console when the run ends: a row spooled to disk
-- during a database outage and written again after a crash is written once (insert ... on
-- conflict (row_key) do nothing). Rows recorded before have none.
alter table execution add column row_key text;
create unique index execution_row_key on execution (row_key);
