//! The process's open-descriptor budget: raised to the hard limit at start, and the share of
//! it client connections may take.

/// Raises the soft limit on open descriptors to the hard one and returns it: each
/// connection, database handle and sandbox pipe takes one, and the usual soft limit of 1024
/// (or 256) is what let idle connections starve `/healthz`.
pub fn raise_descriptor_limit() -> u64 {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => limit,
        Err(error) => {
            tracing::warn!(%error, "could not raise the open-files limit");
            rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(soft, _)| soft)
        }
    }
}

/// Descriptors kept for everything but client connections (database, sandboxes, logs).
const RESERVED_DESCRIPTORS: u64 = 128;

/// The connection cap in force: the configured one, within what the descriptor limit allows.
pub fn effective_max_connections(configured: usize, descriptor_limit: u64) -> usize {
    let room = descriptor_limit
        .saturating_sub(RESERVED_DESCRIPTORS)
        .max(16);
    configured
        .min(usize::try_from(room).unwrap_or(usize::MAX))
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_cap_leaves_room_for_other_descriptors() {
        assert_eq!(effective_max_connections(1024, 1_048_576), 1024);
        assert_eq!(effective_max_connections(1024, 256), 128);
        assert_eq!(effective_max_connections(1024, 100), 16);
        assert_eq!(effective_max_connections(0, 100_000), 1);
    }
}
