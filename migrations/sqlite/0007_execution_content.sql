-- Code and output of a run, filled only while an admin keeps them (history settings, off by
-- default) and cut at the configured size. The hash and sizes are always recorded.
alter table execution add column code text;
alter table execution add column stdout text;
alter table execution add column stderr text;
