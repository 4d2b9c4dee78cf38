//! The OS keychain, for secret values: the macOS Keychain, the Windows
//! Credential Manager, the Secret Service (GNOME Keyring, KWallet) over
//! D-Bus on Linux — through the `keyring` crate, one entry per secret under
//! the service [`SERVICE`].
//!
//! Where there is none (a headless Linux without a D-Bus session, a locked
//! or missing Secret Service), every call fails with
//! [`KeychainError::Unavailable`] and [`crate::memory::secrets`] keeps the value in
//! its owner-only file instead. Each call is bounded by [`CALL_TIMEOUT`]: a
//! keychain that does not answer (a D-Bus activation that hangs) counts as
//! unavailable.

use std::sync::Arc;
use std::time::Duration;

/// The keychain service Errand's entries are filed under.
pub const SERVICE: &str = "errand";
/// The longest one keychain call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the keychain could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeychainError {
    /// No keychain here, or it refused access.
    #[error("the OS keychain is not available: {0}")]
    Unavailable(String),
    /// The keychain answered, but the entry could not be read or written.
    #[error("the OS keychain failed: {0}")]
    Failed(String),
}

/// A place for secret values, by name.
pub trait Keychain: Send + Sync + std::fmt::Debug {
    /// The value stored under `name`, or `None` when there is none.
    fn get(&self, name: &str) -> Result<Option<String>, KeychainError>;
    /// Stores `value` under `name` (replacing an older one).
    fn set(&self, name: &str, value: &str) -> Result<(), KeychainError>;
    /// Removes `name` (nothing to remove is fine).
    fn delete(&self, name: &str) -> Result<(), KeychainError>;
    /// What it is, for `errand doctor` and `errand memory list`.
    fn describe(&self) -> &'static str;
}

/// The OS keychain (through `keyring`).
#[derive(Debug, Clone)]
pub struct OsKeychain {
    service: String,
}

impl OsKeychain {
    /// Entries under [`SERVICE`].
    pub fn new() -> OsKeychain {
        OsKeychain::with_service(SERVICE)
    }

    /// Entries under another service name (tests use their own).
    pub fn with_service(service: &str) -> OsKeychain {
        OsKeychain { service: service.to_owned() }
    }

    /// Runs `op` on its own thread, waiting at most [`CALL_TIMEOUT`].
    fn bounded<T: Send + 'static>(
        &self,
        name: &str,
        op: impl FnOnce(keyring::Entry) -> Result<T, keyring::Error> + Send + 'static,
    ) -> Result<T, KeychainError> {
        let (service, name) = (self.service.clone(), name.to_owned());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("errand-keychain".into())
            .spawn(move || {
                let result = keyring::Entry::new(&service, &name).and_then(op);
                let _ = tx.send(result);
            })
            .map_err(|e| KeychainError::Unavailable(format!("cannot start a thread: {e}")))?;
        match rx.recv_timeout(CALL_TIMEOUT) {
            Ok(result) => result.map_err(classify),
            Err(_) => Err(KeychainError::Unavailable(format!(
                "it did not answer within {} s",
                CALL_TIMEOUT.as_secs()
            ))),
        }
    }
}

impl Default for OsKeychain {
    fn default() -> Self {
        OsKeychain::new()
    }
}

/// A `keyring` error as unavailable (no keychain, no access) or failed.
fn classify(e: keyring::Error) -> KeychainError {
    use keyring::Error as K;
    let text = crate::llm::error_chain(&e);
    match e {
        K::PlatformFailure(_) | K::NoStorageAccess(_) => KeychainError::Unavailable(text),
        _ => KeychainError::Failed(text),
    }
}

impl Keychain for OsKeychain {
    fn get(&self, name: &str) -> Result<Option<String>, KeychainError> {
        self.bounded(name, |entry| match entry.get_password() {
            Ok(v) => Ok(Some(v)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(e),
        })
    }

    fn set(&self, name: &str, value: &str) -> Result<(), KeychainError> {
        let value = value.to_owned();
        self.bounded(name, move |entry| entry.set_password(&value))
    }

    fn delete(&self, name: &str) -> Result<(), KeychainError> {
        self.bounded(name, |entry| match entry.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(e),
        })
    }

    fn describe(&self) -> &'static str {
        if cfg!(target_os = "macos") {
            "the macOS Keychain"
        } else if cfg!(windows) {
            "the Windows Credential Manager"
        } else {
            "the Secret Service (GNOME Keyring, KWallet)"
        }
    }
}

/// Whether `keychain` can be used now: reads an entry that need not exist.
pub fn probe(keychain: &dyn Keychain) -> Result<(), KeychainError> {
    keychain.get("errand-probe").map(|_| ())
}

/// The keychain used by default.
pub fn os() -> Arc<dyn Keychain> {
    Arc::new(OsKeychain::new())
}

/// Keychains for tests: one in memory, one that is never there.
#[cfg(test)]
pub mod fake {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use super::*;

    /// An in-memory keychain.
    #[derive(Debug, Default)]
    pub struct Memory {
        pub entries: Mutex<BTreeMap<String, String>>,
    }

    impl Keychain for Memory {
        fn get(&self, name: &str) -> Result<Option<String>, KeychainError> {
            Ok(self.entries.lock().unwrap().get(name).cloned())
        }
        fn set(&self, name: &str, value: &str) -> Result<(), KeychainError> {
            self.entries.lock().unwrap().insert(name.to_owned(), value.to_owned());
            Ok(())
        }
        fn delete(&self, name: &str) -> Result<(), KeychainError> {
            self.entries.lock().unwrap().remove(name);
            Ok(())
        }
        fn describe(&self) -> &'static str {
            "a test keychain"
        }
    }

    /// A keychain that is not there (like a Linux without D-Bus).
    #[derive(Debug, Default)]
    pub struct Missing;

    impl Keychain for Missing {
        fn get(&self, _: &str) -> Result<Option<String>, KeychainError> {
            Err(KeychainError::Unavailable("no D-Bus session (test)".into()))
        }
        fn set(&self, _: &str, _: &str) -> Result<(), KeychainError> {
            Err(KeychainError::Unavailable("no D-Bus session (test)".into()))
        }
        fn delete(&self, _: &str) -> Result<(), KeychainError> {
            Err(KeychainError::Unavailable("no D-Bus session (test)".into()))
        }
        fn describe(&self) -> &'static str {
            "a missing keychain"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_keychain_either_works_or_says_it_is_not_available() {
        // On this CI machine (Linux, no D-Bus session) it is not available;
        // on a desktop it works. Either way nothing hangs and the answer is
        // one of the two, under a service name of the test's own.
        let service = format!("errand-test-{}", uuid::Uuid::new_v4());
        let keychain = OsKeychain::with_service(&service);
        let started = std::time::Instant::now();
        match probe(&keychain) {
            Ok(()) => {
                keychain.set("t", "v1").unwrap();
                assert_eq!(keychain.get("t").unwrap().as_deref(), Some("v1"));
                keychain.delete("t").unwrap();
                assert_eq!(keychain.get("t").unwrap(), None);
            }
            Err(KeychainError::Unavailable(why)) => {
                assert!(!why.is_empty());
                let e = keychain.set("t", "v1").unwrap_err();
                assert!(matches!(e, KeychainError::Unavailable(_)), "{e}");
                assert!(e.to_string().starts_with("the OS keychain is not available"), "{e}");
            }
            Err(other) => panic!("a probe fails only as unavailable: {other}"),
        }
        assert!(started.elapsed() < CALL_TIMEOUT * 3);
    }

    #[test]
    fn on_a_linux_without_d_bus_the_keychain_is_found_missing() {
        if !cfg!(target_os = "linux") || std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some() {
            return;
        }
        let runtime_bus = std::env::var_os("XDG_RUNTIME_DIR")
            .map(|d| std::path::Path::new(&d).join("bus").exists())
            .unwrap_or(false);
        if runtime_bus {
            return;
        }
        let e = probe(&OsKeychain::with_service("errand-test-probe")).unwrap_err();
        assert!(matches!(e, KeychainError::Unavailable(_)), "{e}");
    }
}
