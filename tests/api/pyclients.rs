//! The Python clients the tests drive the console with (E2B's SDK from PyPI, an OpenAPI
//! validator), in the virtualenv `scripts/setup.sh` makes from `tests/clients/requirements.txt`.

use std::path::PathBuf;

/// The virtualenv's interpreter; a clear failure when setup has not made it.
pub fn python() -> PathBuf {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/pyclients/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup.sh (make setup), which installs the Python test clients",
        python.display()
    );
    python
}

/// A client script of `tests/clients/`.
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(name)
}
