-- The process that runs a build (`boot_id|pid|start time`): a console or a command that starts
-- beside it can tell a build whose process is gone from one still running, at once, instead of
-- waiting for its heartbeat to fall silent (or marking every build of the database failed).
alter table environment_build add column owner text not null default '';
