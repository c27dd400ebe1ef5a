//! The remote sandboxes a provider has created and not yet deleted, by id: what it needs to
//! reach each (a token and a domain, a data plane), and the list it deletes at shutdown.

use std::{collections::HashMap, sync::Mutex};

#[derive(Debug)]
pub struct OpenSandboxes<T: Clone>(Mutex<HashMap<String, T>>);

impl<T: Clone> Default for OpenSandboxes<T> {
    fn default() -> Self {
        OpenSandboxes(Mutex::new(HashMap::new()))
    }
}

impl<T: Clone> OpenSandboxes<T> {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, T>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn insert(&self, id: String, sandbox: T) {
        self.map().insert(id, sandbox);
    }

    pub fn get(&self, id: &str) -> Option<T> {
        self.map().get(id).cloned()
    }

    pub fn remove(&self, id: &str) {
        self.map().remove(id);
    }

    /// Every id still open (for the deletes at shutdown).
    pub fn ids(&self) -> Vec<String> {
        self.map().keys().cloned().collect()
    }
}
