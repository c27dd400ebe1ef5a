-- An environment may be based on another (its packages first, then its own): "the default
-- plus tabulate" instead of an environment that silently drops what the default had.
-- '' = based on none.
alter table environment add column base text not null default '';
