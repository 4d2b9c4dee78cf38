//! Secrets (passwords, card numbers) for assisted form filling. The model
//! never sees a value: it sees the placeholder `{{secret:NAME}}` and writes
//! it as the text of a `fill`/`type`; the host puts the value in only when
//! the page's origin is one the secret is allowed for, and scrubs the value
//! from everything it records or shows afterwards.
//!
//! Values live in `<data dir>/secrets.json`, created owner-only (0600) —
//! the fallback the OS keychain would replace; it never goes into SQLite or
//! the log.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use errand_protocol::Action;
use serde::{Deserialize, Serialize};

/// The secrets file's name inside the data dir.
pub const SECRETS_FILE: &str = "secrets.json";

/// One secret.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct Secret {
    pub value: String,
    /// Origins (`https://bank.example`) it may be filled on.
    pub origins: Vec<String>,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret")
            .field("value", &"<hidden>")
            .field("origins", &self.origins)
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
}

/// The secrets file.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    path: PathBuf,
    entries: BTreeMap<String, Secret>,
}

impl Secrets {
    /// Reads `<data_dir>/secrets.json` (empty when absent).
    pub fn load(data_dir: &Path) -> Result<Secrets, SecretError> {
        let path = data_dir.join(SECRETS_FILE);
        let entries = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| SecretError::Parse { path: path.clone(), message: e.to_string() })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(source) => return Err(SecretError::Io { path, source }),
        };
        Ok(Secrets { path, entries })
    }

    /// Writes the file, owner-only.
    pub fn save(&self) -> Result<(), SecretError> {
        let io = |source| SecretError::Io { path: self.path.clone(), source };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let text = serde_json::to_string_pretty(&self.entries).unwrap_or_else(|_| "{}".into());
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
        self.entries.insert(name.to_owned(), Secret { value: value.to_owned(), origins });
        Ok(())
    }

    pub fn forget(&mut self, name: &str) -> bool {
        self.entries.remove(name).is_some()
    }

    /// Names and allowed origins (never values).
    pub fn list(&self) -> Vec<(String, Vec<String>)> {
        self.entries.iter().map(|(k, s)| (k.clone(), s.origins.clone())).collect()
    }

    /// Replaces `{{secret:NAME}}` in a fill/type text with the value, when
    /// `page_url`'s origin is allowed. Other actions come back unchanged.
    /// Returns the action to send and the values put in (to scrub).
    pub fn substitute(
        &self,
        action: &Action,
        page_url: &str,
    ) -> Result<(Action, Vec<String>), SecretError> {
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
            out = out.replace(&placeholder(&name), &secret.value);
            used.push(secret.value.clone());
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

/// Replaces each value with `[secret]` (for anything recorded or shown).
pub fn scrub(text: &str, values: &[String]) -> String {
    values
        .iter()
        .filter(|v| !v.is_empty())
        .fold(text.to_owned(), |t, v| t.replace(v.as_str(), "[secret]"))
}

/// `scheme://host[:port]` of a URL.
pub fn origin_of(url: &str) -> Option<String> {
    let url = url.trim();
    let (scheme, rest) = url.split_once("://")?;
    if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return None;
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or(host);
    if host.is_empty() {
        return None;
    }
    Some(format!("{}://{}", scheme.to_ascii_lowercase(), host.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(text: &str) -> Action {
        Action::Fill { index: 3, text: text.into() }
    }

    #[test]
    fn fills_only_on_allowed_origins() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Secrets::load(dir.path()).unwrap();
        s.set("bank", "hunter2", &["https://Bank.example/login".into()]).unwrap();
        s.save().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode =
                std::fs::metadata(dir.path().join(SECRETS_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let s = Secrets::load(dir.path()).unwrap();
        let (sent, used) =
            s.substitute(&fill("{{secret:bank}}"), "https://bank.example/x?y").unwrap();
        assert_eq!(sent, fill("hunter2"));
        assert_eq!(used, vec!["hunter2".to_owned()]);
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
        assert_eq!(scrub("typed hunter2!", &used_values()), "typed [secret]!");
    }

    fn used_values() -> Vec<String> {
        vec!["hunter2".into()]
    }

    #[test]
    fn reads_origins() {
        assert_eq!(origin_of("http://form.test/"), Some("http://form.test".into()));
        assert_eq!(origin_of("https://u:p@a.b:8443/x"), Some("https://a.b:8443".into()));
        assert_eq!(origin_of("nonsense"), None);
    }
}
