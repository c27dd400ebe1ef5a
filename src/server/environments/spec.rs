//! An environment's effective spec: the packages of the environment it is based on (and of
//! that one's base, up the chain), then its own; and what a change would take away from the
//! providers that use it.

use std::collections::BTreeSet;

use sqlx::AnyPool;

use super::build_parts::Spec;
use crate::{
    model::package_spec,
    server::db::environment::{self as db, EnvRow},
};

/// Longest chain of bases followed.
const MAX_DEPTH: usize = 8;

/// The spec a build of `row` installs: each base's lines first, then its own; source
/// distributions when any of them allows them.
pub async fn effective(pool: &AnyPool, row: &EnvRow) -> Result<Spec, sqlx::Error> {
    let mut chain = vec![row.clone()];
    let mut base = row.base.clone();
    while !base.is_empty() && chain.len() <= MAX_DEPTH {
        let Some(next) = db::get(pool, &base).await? else {
            break;
        };
        if chain.iter().any(|r| r.name == next.name) {
            break;
        }
        base = next.base.clone();
        chain.push(next);
    }
    let mut spec = Spec {
        python: Vec::new(),
        npm: Vec::new(),
        allow_sdists: false,
    };
    for row in chain.iter().rev() {
        spec.python
            .extend(row.python_requirements.lines().map(str::to_owned));
        spec.npm.extend(row.npm_packages.lines().map(str::to_owned));
        spec.allow_sdists |= row.allow_sdists;
    }
    // A line the base has already is not asked for twice.
    let mut seen = BTreeSet::new();
    spec.python.retain(|line| seen.insert(line.clone()));
    let mut seen = BTreeSet::new();
    spec.npm.retain(|item| seen.insert(item.clone()));
    Ok(spec)
}

/// Whether `base` may be `name`'s base: none, or an environment that exists and is not
/// `name` itself or based on it. `Err` says why not, for the form.
pub async fn check_base(pool: &AnyPool, name: &str, base: &str) -> Result<(), String> {
    let mut next = base.to_owned();
    let mut depth = 0;
    while !next.is_empty() {
        if next == name {
            return Err(format!(
                "'{name}' cannot be based on itself, or on an environment based on it."
            ));
        }
        let Ok(Some(row)) = db::get(pool, &next).await else {
            return Err(format!(
                "There is no environment named '{next}' to base it on."
            ));
        };
        depth += 1;
        if depth > MAX_DEPTH {
            return Err(format!("At most {MAX_DEPTH} environments deep."));
        }
        next = row.base;
    }
    Ok(())
}

/// The package names a spec installs by request (normalized Python names, npm names).
pub fn names(spec: &Spec) -> BTreeSet<String> {
    spec.python
        .iter()
        .map(|line| package_spec::requirement_name(line))
        .chain(
            spec.npm
                .iter()
                .map(|item| package_spec::npm_name(item).to_owned()),
        )
        .collect()
}

/// What `before` installs that `after` does not, by name.
pub fn dropped(before: &Spec, after: &Spec) -> Vec<String> {
    let after = names(after);
    names(before)
        .into_iter()
        .filter(|name| !after.contains(name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(python: &[&str], npm: &[&str]) -> Spec {
        Spec {
            python: python.iter().map(|s| s.to_string()).collect(),
            npm: npm.iter().map(|s| s.to_string()).collect(),
            allow_sdists: false,
        }
    }

    #[test]
    fn what_a_change_drops_is_named() {
        let default = spec(&["numpy", "pandas<3", "Matplotlib"], &["axios"]);
        let reports = spec(&["tabulate"], &[]);
        let based = spec(
            &["numpy", "pandas<3", "matplotlib", "tabulate"],
            &["axios@1"],
        );

        assert_eq!(
            dropped(&default, &reports),
            ["axios", "matplotlib", "numpy", "pandas"]
        );
        assert!(dropped(&default, &based).is_empty());
    }
}
