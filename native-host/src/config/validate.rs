//! The rules a setting's value must follow, wherever it comes from: the
//! config file and the environment (checked when the settings are read:
//! a value that breaks a rule is a [`ConfigError::Invalid`] naming the file
//! or the variable, reported by `errand doctor` and at start) and the side
//! panel (`host/panel_api.rs`, which reports it as the field's problem).

use super::ConfigError;

/// The most steps a task may be given (`max_steps`).
pub const MAX_STEPS_LIMIT: u32 = 500;

/// `max_steps`: 1 to [`MAX_STEPS_LIMIT`].
pub fn max_steps(n: u64) -> Result<u32, String> {
    match u32::try_from(n) {
        Ok(n) if (1..=MAX_STEPS_LIMIT).contains(&n) => Ok(n),
        _ => Err(format!("must be between 1 and {MAX_STEPS_LIMIT}, not {n}")),
    }
}

/// A model server's address: http(s) with a host, without a query or a
/// fragment, no trailing `/`. Empty: back to the provider's default
/// (`None`).
pub fn base_url(b: &str) -> Result<Option<String>, &'static str> {
    let b = b.trim();
    if b.is_empty() {
        return Ok(None);
    }
    let url = url::Url::parse(b).map_err(|_| "is not a web address like https://api.example/v1")?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("must start with http:// or https://");
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("has no host");
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("may not hold a query (`?…`) or a fragment (`#…`)");
    }
    Ok(Some(b.trim_end_matches('/').to_owned()))
}

/// A site list normalised and without repeats (blank entries dropped), or
/// one message per bad entry, naming it.
pub fn sites(list: &[String]) -> Result<Vec<String>, Vec<String>> {
    let mut good: Vec<String> = Vec::new();
    let mut bad = Vec::new();
    for entry in list.iter().filter(|e| !e.trim().is_empty()) {
        match super::normalize_site(entry) {
            Ok(site) if !good.contains(&site) => good.push(site),
            Ok(_) => {}
            Err(why) => bad.push(format!(
                "`{}`: {why} (write example.com, *.example.com or https://example.com)",
                shown(entry)
            )),
        }
    }
    if bad.is_empty() { Ok(good) } else { Err(bad) }
}

/// A value as a message may quote it: trimmed, cut to 80 characters.
pub fn shown(v: &str) -> String {
    crate::text::cut(v.trim(), 80)
}

/// The error for a value from `origin` (a variable, a flag, or the file and
/// its key) that breaks `rule`.
pub(super) fn invalid(origin: impl Into<String>, rule: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { origin: origin.into(), rule: rule.into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{FileConfig, Overrides, Settings, env};

    /// What reading `file` with `vars` says is wrong.
    fn error(file: FileConfig, vars: &[(&str, &str)]) -> String {
        let vars: Vec<(String, String)> =
            vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let lookup = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        Settings::resolve(file, &lookup, &Overrides::default(), "cfg".into(), "data".into())
            .expect_err("the settings break a rule")
            .to_string()
    }

    #[test]
    fn values_from_the_file_and_the_environment_follow_the_panels_rules() {
        let mut file = FileConfig::default();
        file.agent.max_steps = Some(501);
        let e = error(file, &[]);
        assert!(e.contains("`[agent] max_steps` in cfg"), "{e}");
        assert!(e.contains("must be between 1 and 500, not 501"), "{e}");

        // Also when a variable overrides it.
        let mut file = FileConfig::default();
        file.agent.max_steps = Some(0);
        let e = error(file, &[(env::MAX_STEPS, "9")]);
        assert!(e.contains("`[agent] max_steps` in cfg") && e.ends_with("not 0"), "{e}");

        let e = error(FileConfig::default(), &[(env::MAX_STEPS, "600")]);
        assert_eq!(e, "ERRAND_MAX_STEPS must be between 1 and 500, not 600");

        let e = error(FileConfig::default(), &[(env::BASE_URL, "ftp://models.example")]);
        assert_eq!(e, "ERRAND_BASE_URL `ftp://models.example` must start with http:// or https://");
        let mut file = FileConfig::default();
        file.model.base_url = Some("https://models.example/v1?key=1".into());
        let e = error(file, &[]);
        assert!(
            e.contains("`[model] base_url` in cfg") && e.contains("may not hold a query"),
            "{e}"
        );

        let mut file = FileConfig::default();
        file.sites.deny = vec!["ads.example".into(), "shop.example/cart".into()];
        let e = error(file, &[]);
        assert!(e.contains("`[sites] deny` in cfg"), "{e}");
        assert!(e.contains("`shop.example/cart`: a site is a host name without a path"), "{e}");
    }

    #[test]
    fn the_rules() {
        assert_eq!(max_steps(500), Ok(500));
        assert!(max_steps(0).is_err() && max_steps(501).is_err() && max_steps(u64::MAX).is_err());
        assert_eq!(base_url(" http://127.0.0.1:5/v1/ "), Ok(Some("http://127.0.0.1:5/v1".into())));
        assert_eq!(base_url(""), Ok(None));
        assert!(base_url("ftp://x").is_err() && base_url("https://x/v1?a=1").is_err());
        assert_eq!(
            sites(&["Shop.example".into(), " ".into(), "shop.example/".into()]),
            Ok(vec!["shop.example".into()])
        );
        assert!(sites(&["a/b".into()]).unwrap_err()[0].contains("`a/b`"));
    }
}
