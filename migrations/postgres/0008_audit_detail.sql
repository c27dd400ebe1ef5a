-- PostgreSQL twin of migrations/sqlite/0008.
alter table settings_audit add column detail text collate "C" not null default '{}' check (detail::jsonb is not null);
