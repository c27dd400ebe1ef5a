-- The audit now also records connection tests (where the test went and whether it passed)
-- and sign-ins (from which address, and whether they succeeded): events that change no key,
-- so they need a place of their own. A JSON object, never with setting or secret values.
alter table settings_audit add column detail text not null default '{}' check (json_valid(detail));
