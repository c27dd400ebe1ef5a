-- The session a run was a cell or a command of (NULL for stateless runs).
alter table execution add column session_id text;
create index execution_session on execution (session_id);
