//! The user's profile for assisted form filling:
//! named facts (name, e-mail, phone, address…) in SQLite, given to the
//! model; secrets (passwords, card numbers) in [`crate::memory::secrets`], never
//! given to the model.
//!
//! [`view`], [`set_fact`], [`set_secret`] and [`forget`] are the one
//! implementation behind both `errand memory` and the side panel's profile
//! requests.

use std::path::Path;
use std::sync::Mutex;

use errand_protocol::{Fact, ProfileView, SecretInfo};

use crate::config::SecretsStore;
use crate::memory::secrets::{SecretError, Secrets};
use crate::memory::store::{Store, StoreError};

/// The longest name of a fact or a secret, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// The longest value of a fact or a secret, in bytes.
pub const MAX_VALUE_BYTES: usize = 4096;

/// Read-modify-write of the secrets file, one at a time in this process.
static SECRETS_FILE: Mutex<()> = Mutex::new(());

/// Why a profile change was refused or failed. No message ever holds a
/// secret's value.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("the name is empty: give the fact or secret a name")]
    EmptyName,
    #[error("the name `{0}` is too long: at most {MAX_NAME_CHARS} characters")]
    NameTooLong(String),
    #[error("the name `{name}` {why}")]
    BadName { name: String, why: &'static str },
    #[error("the value of `{name}` is too long ({bytes} bytes): at most {MAX_VALUE_BYTES} bytes")]
    ValueTooLong { name: String, bytes: usize },
    #[error("the fact `{0}` has no value: give one, or forget the fact")]
    EmptyFact(String),
    #[error("the secret `{0}` has no value")]
    EmptySecret(String),
    #[error(
        "the secret `{0}` needs at least one site it may be filled on, like https://bank.example"
    )]
    NoOrigins(String),
    #[error(
        "`{entry}` is not a site a secret can be filled on ({why}): write an origin like https://bank.example"
    )]
    BadOrigin { entry: String, why: &'static str },
    #[error("`{name}` is already the name of a {other}: forget it first, or pick another name")]
    NameTaken { name: String, other: &'static str },
    #[error("nothing named `{0}` in the profile")]
    Unknown(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Secrets(#[from] SecretError),
}

impl ProfileError {
    /// Whether the request itself was wrong (rather than the host's files).
    pub fn is_bad_request(&self) -> bool {
        !matches!(self, ProfileError::Store(_) | ProfileError::Secrets(_))
    }
}

/// What [`forget`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forgotten {
    pub fact: bool,
    pub secret: bool,
}

/// The profile: facts with their values, secrets by name and origins only.
pub fn view(store: &Store, data_dir: &Path) -> Result<ProfileView, ProfileError> {
    let facts = store.facts()?.into_iter().map(|(name, value)| Fact { name, value }).collect();
    let index = Secrets::index(data_dir)?;
    let secrets = index
        .list()
        .into_iter()
        .map(|(name, origins)| SecretInfo { any_field: index.any_field(&name), name, origins })
        .collect();
    Ok(ProfileView { facts, secrets })
}

/// Adds or changes a fact. Name and value are trimmed; the name is at most
/// 64 characters, the value at most 4 KB. Returns the name as stored.
pub fn set_fact(
    store: &Store,
    data_dir: &Path,
    name: &str,
    value: &str,
) -> Result<String, ProfileError> {
    let name = checked_name(name)?;
    let value = value.trim();
    if value.is_empty() {
        return Err(ProfileError::EmptyFact(name));
    }
    check_value_size(&name, value)?;
    let secrets = Secrets::index(data_dir)?;
    if secrets.list().iter().any(|(n, _)| *n == name) {
        return Err(ProfileError::NameTaken { name, other: "secret" });
    }
    store.set_fact(&name, value)?;
    Ok(name)
}

/// Adds or changes a secret, fillable only on `origins` (at least one
/// `http(s)://host[:port]`; a pasted address is cut to its origin); its
/// value goes where `secrets_store` says (the OS keychain, else the
/// owner-only file). The value is kept as given (spaces included). With
/// `any_field` it may go into any field of those sites, else only into
/// secret fields (password, one-time code, card data). Returns the name as
/// stored.
pub fn set_secret(
    store: &Store,
    data_dir: &Path,
    secrets_store: SecretsStore,
    name: &str,
    value: &str,
    origins: &[String],
    any_field: bool,
) -> Result<String, ProfileError> {
    let name = checked_name(name)?;
    if name.contains(['{', '}']) {
        return Err(ProfileError::BadName { name, why: "may not hold `{` or `}`" });
    }
    if value.is_empty() {
        return Err(ProfileError::EmptySecret(name));
    }
    check_value_size(&name, value)?;
    let origins = checked_origins(&name, origins)?;
    if store.facts()?.iter().any(|(n, _)| *n == name) {
        return Err(ProfileError::NameTaken { name, other: "fact" });
    }
    let _one = SECRETS_FILE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut secrets = Secrets::load(data_dir)?.with_store(secrets_store);
    secrets.set(&name, value, &origins)?;
    secrets.set_any_field(&name, any_field)?;
    secrets.save()?;
    Ok(name)
}

/// Forgets the fact or the secret named `name` (both, if both exist).
pub fn forget(store: &Store, data_dir: &Path, name: &str) -> Result<Forgotten, ProfileError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ProfileError::EmptyName);
    }
    let fact = store.forget_fact(name)?;
    let _one = SECRETS_FILE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut secrets = Secrets::load(data_dir)?;
    let secret = secrets.forget(name);
    if secret {
        secrets.save()?;
    }
    if !fact && !secret {
        return Err(ProfileError::Unknown(name.to_owned()));
    }
    Ok(Forgotten { fact, secret })
}

/// Where secrets live, one line: "Secrets: 2 in the OS keychain (…)
/// (secrets_store = auto)".
pub fn secrets_line(secrets: &Secrets, setting: SecretsStore) -> String {
    let location = secrets.location();
    let new_ones = match setting {
        SecretsStore::File => "new ones go to the owner-only file".to_owned(),
        SecretsStore::Keychain => format!("new ones go to the OS keychain ({})", location.keychain),
        SecretsStore::Auto => format!(
            "new ones go to the OS keychain ({}) when it answers, else to the owner-only file",
            location.keychain
        ),
    };
    format!("Secrets: {location}; {new_ones} (secrets_store = {})", setting.name())
}

fn checked_name(name: &str) -> Result<String, ProfileError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ProfileError::EmptyName);
    }
    if name.chars().count() > MAX_NAME_CHARS {
        let head: String = name.chars().take(MAX_NAME_CHARS).collect();
        return Err(ProfileError::NameTooLong(format!("{head}…")));
    }
    if name.chars().any(char::is_control) {
        return Err(ProfileError::BadName {
            name: name.escape_debug().to_string(),
            why: "holds a line break or another control character",
        });
    }
    Ok(name.to_owned())
}

fn check_value_size(name: &str, value: &str) -> Result<(), ProfileError> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(ProfileError::ValueTooLong { name: name.to_owned(), bytes: value.len() });
    }
    Ok(())
}

/// Each origin normalised (`scheme://host[:port]`, default port left out),
/// without repeats; at least one.
fn checked_origins(name: &str, origins: &[String]) -> Result<Vec<String>, ProfileError> {
    let mut out: Vec<String> = Vec::new();
    for entry in origins.iter().map(|o| o.trim()).filter(|o| !o.is_empty()) {
        let origin = web_origin(entry)
            .map_err(|why| ProfileError::BadOrigin { entry: entry.to_owned(), why })?;
        if !out.contains(&origin) {
            out.push(origin);
        }
    }
    if out.is_empty() {
        return Err(ProfileError::NoOrigins(name.to_owned()));
    }
    Ok(out)
}

/// The origin of an http(s) address: `https://bank.example`,
/// `http://127.0.0.1:8080`. A path is dropped (a secret is allowed on a
/// whole origin).
pub fn web_origin(entry: &str) -> Result<String, &'static str> {
    use crate::origin::{NotAnOrigin, Origin};
    Origin::web(entry, false).map(Origin::into_string).map_err(|why| match why {
        NotAnOrigin::NotAUrl | NotAnOrigin::Path => "not a web address",
        NotAnOrigin::NotWeb => "only http and https pages have forms to fill",
        NotAnOrigin::Credentials => "an origin has no user name or password",
        NotAnOrigin::NoHost => "no host",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_in(dir.path()).unwrap();
        (dir, store)
    }

    #[test]
    fn facts_are_checked_trimmed_and_listed() {
        let (dir, store) = open();
        assert_eq!(set_fact(&store, dir.path(), "  email ", " ada@example.com ").unwrap(), "email");
        let p = view(&store, dir.path()).unwrap();
        assert_eq!(p.facts, vec![Fact { name: "email".into(), value: "ada@example.com".into() }]);
        assert!(matches!(set_fact(&store, dir.path(), " ", "x"), Err(ProfileError::EmptyName)));
        let long = "n".repeat(65);
        assert!(matches!(
            set_fact(&store, dir.path(), &long, "x"),
            Err(ProfileError::NameTooLong(_))
        ));
        assert!(set_fact(&store, dir.path(), &"n".repeat(64), "x").is_ok());
        let big = "v".repeat(4097);
        let e = set_fact(&store, dir.path(), "big", &big).unwrap_err();
        assert!(e.to_string().contains("at most 4096 bytes"), "{e}");
        assert!(set_fact(&store, dir.path(), "big", &"v".repeat(4096)).is_ok());
        assert!(matches!(
            set_fact(&store, dir.path(), "a\nb", "x"),
            Err(ProfileError::BadName { .. })
        ));
        assert!(matches!(set_fact(&store, dir.path(), "e", "  "), Err(ProfileError::EmptyFact(_))));
        assert!(set_fact(&store, dir.path(), "e", "  ").unwrap_err().is_bad_request());
    }

    #[test]
    fn secrets_need_a_value_and_web_origins_and_never_show_it() {
        let (dir, store) = open();
        let origins = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        set_secret(
            &store,
            dir.path(),
            SecretsStore::File,
            "bank",
            " hunter2 ",
            &origins(&[
                "https://Bank.example:443/login",
                "https://bank.example",
                "http://127.0.0.1:8080",
            ]),
            false,
        )
        .unwrap();
        let p = view(&store, dir.path()).unwrap();
        assert_eq!(
            p.secrets,
            vec![SecretInfo {
                name: "bank".into(),
                origins: origins(&["https://bank.example", "http://127.0.0.1:8080"]),
                any_field: false,
            }]
        );
        assert!(!format!("{p:?}").contains("hunter2"));
        // The value is kept exactly, spaces included.
        let s = Secrets::load(dir.path()).unwrap();
        let fill = errand_protocol::Action::Fill { index: 1, text: "{{secret:bank}}".into() };
        let (filled, _) = s.substitute(&fill, "https://bank.example/x").unwrap();
        assert_eq!(filled, errand_protocol::Action::Fill { index: 1, text: " hunter2 ".into() });

        for (bad, what) in [
            (vec![], "needs at least one site"),
            (vec!["bank.example"], "not a web address"),
            (vec!["ftp://bank.example"], "only http and https"),
            (vec!["https://u:p@bank.example"], "user name"),
        ] {
            let e =
                set_secret(&store, dir.path(), SecretsStore::File, "x", "v", &origins(&bad), false)
                    .unwrap_err();
            assert!(e.to_string().contains(what), "{bad:?}: {e}");
            assert!(e.is_bad_request());
        }
        let e = set_secret(
            &store,
            dir.path(),
            SecretsStore::File,
            "x",
            "",
            &origins(&["https://a.example"]),
            false,
        )
        .unwrap_err();
        assert!(matches!(e, ProfileError::EmptySecret(_)), "{e}");
        let e = set_secret(
            &store,
            dir.path(),
            SecretsStore::File,
            "a}}b",
            "v",
            &origins(&["https://a.example"]),
            false,
        )
        .unwrap_err();
        assert!(matches!(e, ProfileError::BadName { .. }), "{e}");
        let e = set_secret(
            &store,
            dir.path(),
            SecretsStore::File,
            "big",
            &"v".repeat(5000),
            &origins(&["https://a.example"]),
            false,
        )
        .unwrap_err();
        assert!(!e.to_string().contains("vvvv"), "{e}");
    }

    #[test]
    fn a_name_is_a_fact_or_a_secret_and_forget_removes_it() {
        let (dir, store) = open();
        set_fact(&store, dir.path(), "email", "ada@example.com").unwrap();
        set_secret(
            &store,
            dir.path(),
            SecretsStore::File,
            "pw",
            "hunter2",
            &["https://a.example".into()],
            false,
        )
        .unwrap();
        let e = set_secret(
            &store,
            dir.path(),
            SecretsStore::File,
            "email",
            "x",
            &["https://a.example".into()],
            false,
        )
        .unwrap_err();
        assert!(matches!(e, ProfileError::NameTaken { other: "fact", .. }), "{e}");
        let e = set_fact(&store, dir.path(), "pw", "x").unwrap_err();
        assert!(matches!(e, ProfileError::NameTaken { other: "secret", .. }), "{e}");
        assert_eq!(
            forget(&store, dir.path(), " pw ").unwrap(),
            Forgotten { fact: false, secret: true }
        );
        assert_eq!(
            forget(&store, dir.path(), "email").unwrap(),
            Forgotten { fact: true, secret: false }
        );
        let e = forget(&store, dir.path(), "email").unwrap_err();
        assert_eq!(e.to_string(), "nothing named `email` in the profile");
        assert_eq!(view(&store, dir.path()).unwrap(), ProfileView::default());
    }
}
