//! One [`Origin`] type for every rule that compares origins: the sites a
//! secret may be filled on (`memory/secrets.rs`, `memory/profile.rs`), the
//! origin entries of the site lists (`config/entries.rs`, `sites.rs`) and
//! the agent's scrubbing guard (`agent/record.rs`). The host of a URL for
//! recall by site (`memory/store.rs`, `site_of`) is not an origin.
//!
//! The site lists compare hosts one step further ([`site_host`]): every
//! way of writing the same host is one — case, a trailing dot
//! (`localhost.`), an international name and its punycode, the numeric
//! forms of an IPv4 address (`2130706433`, `0x7f.1`, `127.1`,
//! `0177.0.0.1`), IPv6 spellings (`[0:0:0:0:0:0:0:1]` is `[::1]`) and an
//! IPv4-mapped IPv6 address (`[::ffff:127.0.0.1]` is `127.0.0.1`). The
//! parsing is the WHATWG URL parser's (the `url` crate), as the browser's.
//! An [`Origin`] stays what `location.origin` reads (a trailing dot is a
//! different origin to the browser, and a secret is filled on its own).

use url::{Host, Url};

/// A host as the site lists compare it: lower case, ASCII (punycode), no
/// trailing dot, an IPv4 address dotted, an IPv6 one compressed in
/// brackets, an IPv4-mapped IPv6 one as its IPv4 address.
pub fn site_host<S: AsRef<str>>(host: &Host<S>) -> String {
    match host {
        Host::Domain(d) => d.as_ref().trim_end_matches('.').to_ascii_lowercase(),
        Host::Ipv4(ip) => ip.to_string(),
        Host::Ipv6(ip) => match ip.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => format!("[{ip}]"),
        },
    }
}

/// The host of `url` as the site lists compare it ([`site_host`]).
pub fn site_host_of(url: &Url) -> Option<String> {
    url.host().map(|h| site_host(&h))
}

/// A host the user wrote (a site-list entry without a scheme), read as the
/// browser reads the host of an http address.
pub fn parse_site_host(text: &str) -> Option<Host<String>> {
    Host::parse(text).ok()
}

/// A web origin as the page's `location.origin` reads it:
/// `scheme://host[:port]`, lower case, an international host in its ASCII
/// form, the scheme's default port left out.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin(String);

/// Why an address the user gave is not a web origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotAnOrigin {
    /// It does not parse as a URL.
    NotAUrl,
    /// Not `http` or `https`.
    NotWeb,
    /// It carries a user name or a password.
    Credentials,
    /// It has a path, a query or a fragment (where a whole origin is asked for).
    Path,
    /// It has no host.
    NoHost,
}

impl Origin {
    /// The origin of the document at `url`; `None` for an address without
    /// a host (`about:blank`, `data:`, `file:`, not a URL).
    pub fn of(url: &str) -> Option<Origin> {
        Origin::of_url(&Url::parse(url.trim()).ok()?)
    }

    /// The origin of a parsed URL; `None` without a host.
    pub fn of_url(url: &Url) -> Option<Origin> {
        let host = url.host_str().filter(|h| !h.is_empty())?.to_ascii_lowercase();
        // `Url` gives no port when it is the scheme's default.
        Some(Origin(match url.port() {
            Some(port) => format!("{}://{host}:{port}", url.scheme()),
            None => format!("{}://{host}", url.scheme()),
        }))
    }

    /// An http(s) origin the user gave (a secret's site, a site-list
    /// entry). `whole`: a path, query or fragment is refused rather than
    /// dropped.
    pub fn web(entry: &str, whole: bool) -> Result<Origin, NotAnOrigin> {
        let url = Url::parse(entry.trim()).map_err(|_| NotAnOrigin::NotAUrl)?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(NotAnOrigin::NotWeb);
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(NotAnOrigin::Credentials);
        }
        if whole && (url.path() != "/" || url.query().is_some() || url.fragment().is_some()) {
            return Err(NotAnOrigin::Path);
        }
        Origin::of_url(&url).ok_or(NotAnOrigin::NoHost)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(url: &str) -> Option<String> {
        Origin::of(url).map(Origin::into_string)
    }

    #[test]
    fn the_origin_of_a_page() {
        assert_eq!(of("http://form.test/"), Some("http://form.test".into()));
        assert_eq!(of("https://u:p@a.b:8443/x?q#f"), Some("https://a.b:8443".into()));
        assert_eq!(of("HTTPS://Bank.Example:443/login"), Some("https://bank.example".into()));
        assert_eq!(of("http://[::1]:8080/"), Some("http://[::1]:8080".into()));
        assert_eq!(of("https://bücher.example/"), Some("https://xn--bcher-kva.example".into()));
        assert_eq!(of("chrome-extension://abc/panel.html"), Some("chrome-extension://abc".into()));
        for none in ["nonsense", "about:blank", "data:text/html,x", "file:///etc/passwd", ""] {
            assert_eq!(of(none), None, "{none}");
        }
    }

    #[test]
    fn every_spelling_of_a_host_is_one_for_the_site_lists() {
        let host = |u: &str| site_host_of(&Url::parse(u).unwrap()).unwrap();
        for (url, want) in [
            ("http://LocalHost./", "localhost"),
            ("http://localhost:8080/", "localhost"),
            ("http://%6cocalhost/", "localhost"),
            ("http://ｌｏｃａｌｈｏｓｔ/", "localhost"),
            ("http://2130706433/", "127.0.0.1"),
            ("http://0x7f.1/", "127.0.0.1"),
            ("http://127.1/", "127.0.0.1"),
            ("http://0177.0.0.1/", "127.0.0.1"),
            ("http://127.0.0.1./", "127.0.0.1"),
            ("http://[::1]/", "[::1]"),
            ("http://[0:0:0:0:0:0:0:1]/", "[::1]"),
            ("http://[::ffff:127.0.0.1]/", "127.0.0.1"),
            ("http://[::ffff:7f00:1]/", "127.0.0.1"),
            ("https://BÜCHER.example./", "xn--bcher-kva.example"),
        ] {
            assert_eq!(host(url), want, "{url}");
        }
        let entry = |e: &str| site_host(&parse_site_host(e).unwrap());
        assert_eq!(entry("LOCALHOST."), "localhost");
        assert_eq!(entry("bücher.example"), "xn--bcher-kva.example");
        assert_eq!(entry("0x7f.1"), "127.0.0.1");
        assert_eq!(entry("[::ffff:127.0.0.1]"), "127.0.0.1");
    }

    #[test]
    fn an_origin_the_user_gave() {
        let web = |e, whole| Origin::web(e, whole).map(Origin::into_string);
        assert_eq!(web(" https://bank.example/login ", false), Ok("https://bank.example".into()));
        assert_eq!(web("http://127.0.0.1:8080", true), Ok("http://127.0.0.1:8080".into()));
        assert_eq!(web("https://bank.example/login", true), Err(NotAnOrigin::Path));
        assert_eq!(web("ftp://bank.example", false), Err(NotAnOrigin::NotWeb));
        assert_eq!(web("https://me:pw@bank.example", false), Err(NotAnOrigin::Credentials));
        assert_eq!(web("bank.example", false), Err(NotAnOrigin::NotAUrl));
    }
}
