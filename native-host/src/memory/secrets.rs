//! Secrets (passwords, card numbers) for assisted form filling. The model
//! never sees a value: it sees the placeholder `{{secret:NAME}}` and writes
//! it as the text of a `fill`/`type`; the host puts the value in only when
//! the page's origin is one the secret is allowed for, and scrubs the value
//! from everything it records or shows afterwards.
//!
//! Names and origins live in `<data dir>/secrets.json`, created owner-only
//! (0600). Values live in the OS keychain ([`crate::memory::keychain`]) where it
//! works (`secrets_store = "auto"` or `"keychain"`), else in that same file
//! (`"file"`, or `"auto"` without a keychain, said so in the log). They
//! never go into SQLite or the log.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use errand_protocol::{Action, Observation};
use serde::{Deserialize, Serialize};

use crate::config::SecretsStore;
use crate::memory::keychain::{self, Keychain, KeychainError};
use crate::origin::Origin;

/// The secrets file's name inside the data dir.
pub const SECRETS_FILE: &str = "secrets.json";

/// One secret.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct Secret {
    /// The value, in the file or read from the keychain (`None`: the
    /// keychain could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Origins (`https://bank.example`) it may be filled on.
    pub origins: Vec<String>,
    /// Whether the value is kept in the OS keychain (then not in the file).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keychain: bool,
    /// Whether it may go into any field of its sites (a user name, an
    /// IBAN); otherwise only into secret fields (password inputs, fields
    /// whose `autocomplete` says password, one-time code or card data).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub any_field: bool,
    /// Why a keychain value could not be read.
    #[serde(skip)]
    pub unreadable: Option<String>,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret")
            .field("value", &"<hidden>")
            .field("origins", &self.origins)
            .field("any_field", &self.any_field)
            .finish()
    }
}

/// What can go wrong with secrets.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("cannot read or write {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path} is not valid: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("no secret named `{0}`")]
    Unknown(String),
    #[error("the secret `{name}` may not be filled on {origin}; it is allowed on: {allowed}")]
    WrongOrigin { name: String, origin: String, allowed: String },
    #[error("`{0}` is not an origin like https://example.com")]
    BadOrigin(String),
    #[error(
        "secrets_store is \"keychain\" but {0}: set secrets_store = \"auto\" (or \"file\") to keep secrets in the owner-only file"
    )]
    NoKeychain(KeychainError),
    #[error("the secret `{name}` is kept in the OS keychain, which cannot be read now: {why}")]
    Unreadable { name: String, why: String },
}

/// The document an action's text goes into: its element's frame's origin
/// when the element is in a cross-origin frame (as the frame's own content
/// script read it), else the page's address. Secrets are checked against
/// it, and the page refuses the fill in a field of another origin.
pub fn document_of<'a>(obs: &'a Observation, action: &Action) -> &'a str {
    action
        .element()
        .and_then(|i| obs.elements.iter().find(|e| e.index == i))
        .and_then(|e| e.origin.as_deref())
        .unwrap_or(&obs.url)
}

/// The secrets: the file of names and origins, values in the keychain or
/// the file.
#[derive(Debug, Clone)]
pub struct Secrets {
    path: PathBuf,
    entries: BTreeMap<String, Secret>,
    keychain: Arc<dyn Keychain>,
    /// Where [`Secrets::save`] puts values.
    store: SecretsStore,
}

impl Default for Secrets {
    fn default() -> Self {
        Secrets {
            path: PathBuf::new(),
            entries: BTreeMap::new(),
            keychain: keychain::os(),
            store: SecretsStore::Auto,
        }
    }
}

/// Where secrets are kept, for `errand memory list` and `errand doctor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub in_keychain: usize,
    pub in_file: usize,
    /// The keychain's name ("the Secret Service …").
    pub keychain: &'static str,
    pub file: PathBuf,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let file = format!("the owner-only file {}", self.file.display());
        match (self.in_keychain, self.in_file) {
            (0, 0) => write!(f, "no secrets yet"),
            (k, 0) => write!(f, "{k} in the OS keychain ({})", self.keychain),
            (0, n) => write!(f, "{n} in {file}"),
            (k, n) => write!(f, "{k} in the OS keychain ({}), {n} in {file}", self.keychain),
        }
    }
}

impl Secrets {
    /// Reads `<data_dir>/secrets.json` (empty when absent), with the values
    /// kept in the OS keychain.
    pub fn load(data_dir: &Path) -> Result<Secrets, SecretError> {
        Secrets::load_with(data_dir, keychain::os())
    }

    /// Names, origins and where each value is, without reading the values
    /// from the keychain (listing secrets never prompts for keychain access).
    pub fn index(data_dir: &Path) -> Result<Secrets, SecretError> {
        Secrets::read(data_dir, keychain::os(), false)
    }

    /// Like [`Secrets::load`] with another keychain.
    pub fn load_with(data_dir: &Path, keychain: Arc<dyn Keychain>) -> Result<Secrets, SecretError> {
        Secrets::read(data_dir, keychain, true)
    }

    fn read(
        data_dir: &Path,
        keychain: Arc<dyn Keychain>,
        read_values: bool,
    ) -> Result<Secrets, SecretError> {
        let path = data_dir.join(SECRETS_FILE);
        let mut entries: BTreeMap<String, Secret> = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| SecretError::Parse { path: path.clone(), message: e.to_string() })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(source) => return Err(SecretError::Io { path, source }),
        };
        for (name, secret) in entries.iter_mut().filter(|(_, s)| s.keychain && read_values) {
            match keychain.get(name) {
                Ok(Some(value)) => secret.value = Some(value),
                Ok(None) => {
                    secret.value = None;
                    secret.unreadable = Some("the keychain has no such entry".to_owned());
                }
                Err(e) => {
                    tracing::warn!(secret = %name, "cannot read a secret from the OS keychain: {e}");
                    secret.value = None;
                    secret.unreadable = Some(e.to_string());
                }
            }
        }
        Ok(Secrets { path, entries, keychain, store: SecretsStore::Auto })
    }

    /// Where [`Secrets::save`] puts values from now on.
    pub fn with_store(mut self, store: SecretsStore) -> Secrets {
        self.store = store;
        self
    }

    /// How many values are where.
    pub fn location(&self) -> Location {
        let in_keychain = self.entries.values().filter(|s| s.keychain).count();
        Location {
            in_keychain,
            in_file: self.entries.len() - in_keychain,
            keychain: self.keychain.describe(),
            file: self.path.clone(),
        }
    }

    /// Puts each value where the store setting says — the keychain
    /// (`keychain`; `auto` when it answers) or the file (`file`; `auto`
    /// without a keychain, logged) — then writes the file, owner-only,
    /// holding only the values not in the keychain.
    pub fn save(&mut self) -> Result<(), SecretError> {
        let mut missing: Option<KeychainError> = None;
        for (name, secret) in self.entries.iter_mut() {
            let Some(value) = secret.value.clone() else { continue };
            match self.store {
                SecretsStore::File if secret.keychain => {
                    secret.keychain = false;
                    if let Err(e) = self.keychain.delete(name) {
                        tracing::warn!(secret = %name, "moved to the file, but not removed from the OS keychain: {e}");
                    }
                }
                SecretsStore::Auto | SecretsStore::Keychain if !secret.keychain => {
                    if missing.is_some() {
                        continue;
                    }
                    match self.keychain.set(name, &value) {
                        Ok(()) => secret.keychain = true,
                        Err(e) => missing = Some(e),
                    }
                }
                _ => {}
            }
        }
        if let Some(e) = missing {
            if self.store == SecretsStore::Keychain {
                return Err(SecretError::NoKeychain(e));
            }
            tracing::warn!(
                "{e}; secrets are kept in the owner-only file {} instead (secrets_store = \"auto\")",
                self.path.display()
            );
        }
        self.write_file()
    }

    /// Writes the file, owner-only: names, origins, and the values not in
    /// the keychain.
    fn write_file(&self) -> Result<(), SecretError> {
        let io = |source| SecretError::Io { path: self.path.clone(), source };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let on_disk: BTreeMap<&String, Secret> = self
            .entries
            .iter()
            .map(|(name, s)| {
                let value = if s.keychain { None } else { s.value.clone() };
                (name, Secret { value, unreadable: None, ..s.clone() })
            })
            .collect();
        let text = serde_json::to_string_pretty(&on_disk).unwrap_or_else(|_| "{}".into());
        let tmp = self.path.with_extension("json.tmp");
        {
            use std::io::Write;
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create(true).truncate(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                opts.mode(0o600);
            }
            let mut f = opts.open(&tmp).map_err(io)?;
            f.write_all(text.as_bytes()).map_err(io)?;
            f.sync_all().map_err(io)?;
        }
        std::fs::rename(&tmp, &self.path).map_err(io)
    }

    pub fn set(&mut self, name: &str, value: &str, origins: &[String]) -> Result<(), SecretError> {
        let origins = origins
            .iter()
            .map(|o| origin_of(o).ok_or_else(|| SecretError::BadOrigin(o.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        // A new value goes where `save` puts it; an old keychain entry of
        // the same name is overwritten there.
        let keychain = self.entries.get(name).is_some_and(|s| s.keychain);
        let any_field = self.entries.get(name).is_some_and(|s| s.any_field);
        let mut secret = Secret {
            value: Some(value.to_owned()),
            origins,
            keychain: false,
            any_field,
            unreadable: None,
        };
        if keychain {
            match self.keychain.set(name, value) {
                Ok(()) => secret.keychain = true,
                Err(e) => {
                    tracing::warn!(secret = %name, "cannot replace the value in the OS keychain: {e}");
                    let _ = self.keychain.delete(name);
                }
            }
        }
        self.entries.insert(name.to_owned(), secret);
        Ok(())
    }

    /// Forgets a secret (from the keychain too).
    pub fn forget(&mut self, name: &str) -> bool {
        match self.entries.remove(name) {
            Some(s) => {
                if s.keychain {
                    if let Err(e) = self.keychain.delete(name) {
                        tracing::warn!(secret = %name, "cannot remove it from the OS keychain: {e}");
                    }
                }
                true
            }
            None => false,
        }
    }

    /// Names and allowed origins (never values).
    pub fn list(&self) -> Vec<(String, Vec<String>)> {
        self.entries.iter().map(|(k, s)| (k.clone(), s.origins.clone())).collect()
    }

    /// Lets the secret `name` go into any field of its sites (`true`), or
    /// only into secret fields (`false`, the default).
    pub fn set_any_field(&mut self, name: &str, any_field: bool) -> Result<(), SecretError> {
        let secret =
            self.entries.get_mut(name).ok_or_else(|| SecretError::Unknown(name.to_owned()))?;
        secret.any_field = any_field;
        Ok(())
    }

    /// Whether the secret `name` may go into any field of its sites.
    pub fn any_field(&self, name: &str) -> bool {
        self.entries.get(name).is_some_and(|s| s.any_field)
    }

    /// `(name, value)` of every secret allowed on one of `origins` (for
    /// the scrubber: a page of those origins may show them).
    pub fn allowed_on<'a>(
        &'a self,
        origins: &'a [String],
    ) -> impl Iterator<Item = (&'a str, &'a str)> {
        self.entries.iter().filter_map(move |(name, s)| {
            let value = s.value.as_deref()?;
            s.origins.iter().any(|o| origins.contains(o)).then_some((name.as_str(), value))
        })
    }

    /// `(name, value)` of every secret whose value could be read.
    pub fn values(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().filter_map(|(name, s)| Some((name.as_str(), s.value.as_deref()?)))
    }

    /// Replaces `{{secret:NAME}}` in a fill/type text with the value, when
    /// `page_url`'s origin is allowed. Other actions come back unchanged.
    /// Returns the action to send and the secrets put in.
    pub fn substitute(
        &self,
        action: &Action,
        page_url: &str,
    ) -> Result<(Action, Vec<Filled>), SecretError> {
        let text = match action {
            Action::Fill { text, .. } | Action::Type { text, .. } => text,
            _ => return Ok((action.clone(), Vec::new())),
        };
        let names = placeholders(text);
        if names.is_empty() {
            return Ok((action.clone(), Vec::new()));
        }
        let origin = origin_of(page_url).unwrap_or_else(|| page_url.to_owned());
        let mut out = text.clone();
        let mut used = Vec::new();
        for name in names {
            let secret =
                self.entries.get(&name).ok_or_else(|| SecretError::Unknown(name.clone()))?;
            if !secret.origins.contains(&origin) {
                return Err(SecretError::WrongOrigin {
                    name,
                    origin,
                    allowed: secret.origins.join(", "),
                });
            }
            let Some(value) = &secret.value else {
                let why = secret.unreadable.clone().unwrap_or_default();
                return Err(SecretError::Unreadable { name, why });
            };
            out = out.replace(&placeholder(&name), value);
            used.push(Filled { value: value.clone(), any_field: secret.any_field, name });
        }
        let mut action = action.clone();
        match &mut action {
            Action::Fill { text, .. } | Action::Type { text, .. } => *text = out,
            _ => {}
        }
        Ok((action, used))
    }

    /// The prompt's lines about secrets: names and origins, never values.
    pub fn prompt_lines(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|(name, s)| format!("- {} (only on {})", placeholder(name), s.origins.join(", ")))
            .collect()
    }
}

/// A secret put into an action by [`Secrets::substitute`].
#[derive(Clone, PartialEq, Eq)]
pub struct Filled {
    pub name: String,
    pub value: String,
    pub any_field: bool,
}

impl std::fmt::Debug for Filled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filled")
            .field("name", &self.name)
            .field("any_field", &self.any_field)
            .finish()
    }
}

/// The scrubber for a task or an MCP session: the values of the secrets
/// `filled` so far (name → value) and of every secret allowed on one of
/// `origins` (the page's and its frames').
pub fn scrubber_for(
    secrets: &Secrets,
    filled: &std::collections::BTreeMap<String, String>,
    origins: &[String],
) -> crate::memory::scrub::Scrubber {
    let allowed = secrets.allowed_on(origins);
    let filled = filled.iter().map(|(n, v)| (n.as_str(), v.as_str()));
    crate::memory::scrub::Scrubber::new(filled.chain(allowed))
}

/// `{{secret:NAME}}`.
pub fn placeholder(name: &str) -> String {
    format!("{{{{secret:{name}}}}}")
}

/// The names in `{{secret:NAME}}` placeholders.
pub fn placeholders(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{secret:") {
        let after = &rest[start + "{{secret:".len()..];
        match after.find("}}") {
            Some(end) => {
                names.push(after[..end].trim().to_owned());
                rest = &after[end + 2..];
            }
            None => break,
        }
    }
    names
}

/// `scheme://host[:port]` of a URL ([`Origin::of`]), as the secrets'
/// origins are kept.
pub fn origin_of(url: &str) -> Option<String> {
    Origin::of(url).map(Origin::into_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(text: &str) -> Action {
        Action::Fill { index: 3, text: text.into() }
    }

    #[test]
    fn a_field_in_a_cross_origin_frame_is_filled_on_the_frame_s_origin() {
        use errand_protocol::ElementInfo;
        let obs = Observation {
            url: "https://shop.example/checkout".into(),
            elements: vec![
                ElementInfo { index: 3, tag: "input".into(), ..Default::default() },
                ElementInfo {
                    index: 4,
                    tag: "input".into(),
                    origin: Some("https://pay.example".into()),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        assert_eq!(document_of(&obs, &fill("x")), "https://shop.example/checkout");
        let in_frame = Action::Fill { index: 4, text: "x".into() };
        assert_eq!(document_of(&obs, &in_frame), "https://pay.example");
        // No element (or one not listed): the page's.
        let typed = Action::Type { index: 0, text: "x".into(), enter: false, clear: false };
        assert_eq!(document_of(&obs, &typed), "https://shop.example/checkout");
        let gone = Action::Fill { index: 9, text: "x".into() };
        assert_eq!(document_of(&obs, &gone), "https://shop.example/checkout");
    }

    #[test]
    fn fills_only_on_allowed_origins() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Secrets::load_with(dir.path(), Arc::new(fake::Missing)).unwrap();
        s.set("bank", "hunter2", &["https://Bank.example/login".into()]).unwrap();
        s.save().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode =
                std::fs::metadata(dir.path().join(SECRETS_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let s = Secrets::load_with(dir.path(), Arc::new(fake::Missing)).unwrap();
        let (sent, used) =
            s.substitute(&fill("{{secret:bank}}"), "https://bank.example/x?y").unwrap();
        assert_eq!(sent, fill("hunter2"));
        assert_eq!(used.iter().map(|f| f.value.as_str()).collect::<Vec<_>>(), ["hunter2"]);
        assert!(!used[0].any_field);
        let e = s.substitute(&fill("{{secret:bank}}"), "https://evil.example/").unwrap_err();
        assert!(e.to_string().contains("may not be filled on https://evil.example"), "{e}");
        assert!(!e.to_string().contains("hunter2"));
        assert!(matches!(
            s.substitute(&fill("{{secret:nope}}"), "https://bank.example/"),
            Err(SecretError::Unknown(_))
        ));
        let (same, used) = s.substitute(&fill("plain"), "https://evil.example/").unwrap();
        assert_eq!((same, used.len()), (fill("plain"), 0));
        assert!(!format!("{s:?}").contains("hunter2"));
        assert!(s.prompt_lines()[0].contains("{{secret:bank}} (only on https://bank.example)"));
        assert!(!format!("{used:?}").contains("hunter2"));
    }

    #[test]
    fn any_field_is_kept_with_the_secret_and_survives_a_new_value() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Secrets::load_with(dir.path(), Arc::new(fake::Missing)).unwrap();
        s.set("user", "ann", &["https://bank.example".into()]).unwrap();
        assert!(!s.any_field("user"));
        s.set_any_field("user", true).unwrap();
        s.save().unwrap();
        let mut s = Secrets::load_with(dir.path(), Arc::new(fake::Missing)).unwrap();
        assert!(s.any_field("user"));
        s.set("user", "bob", &["https://bank.example".into()]).unwrap();
        assert!(s.any_field("user"));
        let (_, used) = s.substitute(&fill("{{secret:user}}"), "https://bank.example/").unwrap();
        assert!(used[0].any_field);
        let origins = ["https://bank.example".to_owned()];
        assert_eq!(s.allowed_on(&origins).collect::<Vec<_>>(), [("user", "bob")]);
        assert_eq!(s.allowed_on(&["https://x.example".to_owned()]).count(), 0);
        assert!(s.set_any_field("nope", true).is_err());
    }

    use crate::memory::keychain::fake;

    fn file_text(dir: &Path) -> String {
        std::fs::read_to_string(dir.join(SECRETS_FILE)).unwrap()
    }

    #[test]
    fn auto_keeps_values_in_the_keychain_and_only_names_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let keychain = Arc::new(fake::Memory::default());
        let mut s = Secrets::load_with(dir.path(), keychain.clone()).unwrap();
        s.set("bank", "hunter2", &["https://bank.example".into()]).unwrap();
        s.save().unwrap();
        assert!(!file_text(dir.path()).contains("hunter2"), "{}", file_text(dir.path()));
        assert!(file_text(dir.path()).contains("\"keychain\": true"));
        assert_eq!(
            keychain.entries.lock().unwrap().get("bank").map(String::as_str),
            Some("hunter2")
        );
        assert_eq!(s.location().to_string(), "1 in the OS keychain (a test keychain)");
        // Read back through the keychain.
        let again = Secrets::load_with(dir.path(), keychain.clone()).unwrap();
        let (sent, _) =
            again.substitute(&fill("{{secret:bank}}"), "https://bank.example/").unwrap();
        assert_eq!(sent, fill("hunter2"));
        // A new value replaces the keychain's; forgetting removes it there.
        let mut again = again;
        again.set("bank", "hunter3", &["https://bank.example".into()]).unwrap();
        again.save().unwrap();
        assert_eq!(
            keychain.entries.lock().unwrap().get("bank").map(String::as_str),
            Some("hunter3")
        );
        assert!(again.forget("bank"));
        again.save().unwrap();
        assert!(keychain.entries.lock().unwrap().is_empty());
    }

    #[test]
    fn auto_without_a_keychain_falls_back_to_the_owner_only_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Secrets::load_with(dir.path(), Arc::new(fake::Missing)).unwrap();
        s.set("bank", "hunter2", &["https://bank.example".into()]).unwrap();
        s.save().unwrap();
        assert!(file_text(dir.path()).contains("hunter2"));
        let location = s.location();
        assert_eq!((location.in_keychain, location.in_file), (0, 1));
        assert!(location.to_string().starts_with("1 in the owner-only file "), "{location}");
        // "keychain" refuses instead, saying what to do.
        let mut strict = Secrets::load_with(dir.path(), Arc::new(fake::Missing))
            .unwrap()
            .with_store(SecretsStore::Keychain);
        strict.set("card", "4111", &["https://shop.example".into()]).unwrap();
        let e = strict.save().unwrap_err();
        assert!(matches!(e, SecretError::NoKeychain(_)), "{e}");
        assert!(
            e.to_string().contains("the OS keychain is not available")
                && e.to_string().contains("\"auto\""),
            "{e}"
        );
        assert!(!file_text(dir.path()).contains("4111"), "nothing written on refusal");
    }

    #[test]
    fn the_real_keychain_or_the_file_whichever_works_here() {
        // The code path that finds the OS keychain missing (this machine:
        // Linux without D-Bus) and falls back, with the real `keyring`
        // backend under a service of the test's own.
        let service = format!("errand-test-{}", uuid::Uuid::new_v4());
        let os: Arc<dyn Keychain> =
            Arc::new(crate::memory::keychain::OsKeychain::with_service(&service));
        let available = crate::memory::keychain::probe(os.as_ref()).is_ok();
        let dir = tempfile::tempdir().unwrap();
        let mut s = Secrets::load_with(dir.path(), os.clone()).unwrap();
        s.set("t", "v-123", &["https://a.example".into()]).unwrap();
        s.save().unwrap();
        let location = s.location();
        assert_eq!(location.in_keychain == 1, available, "{location}");
        assert_eq!(file_text(dir.path()).contains("v-123"), !available);
        let again = Secrets::load_with(dir.path(), os).unwrap();
        let (sent, _) = again.substitute(&fill("{{secret:t}}"), "https://a.example/").unwrap();
        assert_eq!(sent, fill("v-123"));
        let mut again = again;
        again.forget("t");
        again.save().unwrap();
    }

    #[test]
    fn file_moves_keychain_values_into_the_file_and_an_unreadable_one_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let keychain = Arc::new(fake::Memory::default());
        let mut s = Secrets::load_with(dir.path(), keychain.clone()).unwrap();
        s.set("bank", "hunter2", &["https://bank.example".into()]).unwrap();
        s.save().unwrap();
        // Read where the keychain is gone: the value cannot be had.
        let gone = Secrets::load_with(dir.path(), Arc::new(fake::Missing)).unwrap();
        let e = gone.substitute(&fill("{{secret:bank}}"), "https://bank.example/").unwrap_err();
        assert!(matches!(e, SecretError::Unreadable { .. }), "{e}");
        assert!(e.to_string().contains("kept in the OS keychain"), "{e}");
        // `file`: into the file, out of the keychain.
        let mut file = Secrets::load_with(dir.path(), keychain.clone())
            .unwrap()
            .with_store(SecretsStore::File);
        file.save().unwrap();
        assert!(file_text(dir.path()).contains("hunter2"));
        assert!(keychain.entries.lock().unwrap().is_empty());
    }

    #[test]
    fn reads_origins() {
        assert_eq!(origin_of("http://form.test/"), Some("http://form.test".into()));
        assert_eq!(origin_of("https://u:p@a.b:8443/x"), Some("https://a.b:8443".into()));
        assert_eq!(origin_of("nonsense"), None);
        // The scheme's default port written out is the same origin.
        assert_eq!(origin_of("https://bank.example:443/"), Some("https://bank.example".into()));
    }
}
