//! Where Errand may go: the user's allow, deny and ask-first lists, and the
//! pages no task ever touches (the browser's own pages, the extension
//! store, local files, script and data URLs).
//!
//! Enforced by the host on every navigation it makes (`goto`, new tabs, the
//! task's first page) and on every page the agent finds itself on after an
//! action (a link, a form submission, a redirect): the model cannot talk
//! its way past it, whatever a page tells it.
//!
//! List entries: a host name (`example.com`: that host and its
//! subdomains), a wildcard (`*.example.com`: the subdomains only), or an
//! origin (`https://shop.example:8443`: exactly that scheme, host and
//! port).
//!
//! Hosts are compared normalised, entries and addresses alike
//! ([`crate::origin::site_host`], the WHATWG parser of the `url` crate):
//! case, a trailing dot, an international name and its punycode, the
//! numeric IPv4 forms (`2130706433`, `0x7f.1`, `127.1`, `0177.0.0.1`),
//! IPv6 spellings and IPv4-mapped IPv6 (`[::ffff:127.0.0.1]`). With
//! `deny = ["localhost"]`, `http://LOCALHOST.:8080/` is refused; with
//! `deny = ["127.0.0.1"]`, `http://0x7f.1/` and `http://[::ffff:7f00:1]/`
//! are. Every address the host checks goes through [`SitePolicy::check`]
//! (or [`SitePolicy::ask_first`]), and both parse and normalise it here.

use url::{Host, Url};

use crate::config::SitesSection;
use crate::origin::{parse_site_host, site_host, site_host_of};

/// Why Errand will not go somewhere.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SiteRefusal {
    #[error("`{0}` is not a web address Errand can open")]
    NotAUrl(String),
    #[error("Errand never acts on {what} ({url})")]
    Never { url: String, what: &'static str },
    #[error("{host} is on your list of sites Errand must not use (entry `{entry}`)")]
    Denied { host: String, entry: String },
    #[error(
        "{host} is not on your list of sites Errand may use; add it in the side panel's settings \
         ([sites] allow in config.toml) to let Errand go there"
    )]
    NotAllowed { host: String },
    #[error("this task may only use {allowed}, not {host}")]
    NotForThisTask { host: String, allowed: String },
}

/// One list entry, read; hosts as [`site_host`] writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// The host and its subdomains.
    Domain(String),
    /// Subdomains only.
    Subdomains(String),
    /// Exactly this origin (scheme, host and port).
    Origin { scheme: String, host: String, port: u16 },
}

impl Pattern {
    fn parse(entry: &str) -> Option<Pattern> {
        let e = entry.trim();
        if e.is_empty() {
            return None;
        }
        if e.contains("://") {
            let url = Url::parse(e).ok()?;
            let port = url.port_or_known_default()?;
            let host = site_host_of(&url).filter(|h| !h.is_empty())?;
            return Some(Pattern::Origin { scheme: url.scheme().to_owned(), host, port });
        }
        let (wild, rest) = match e.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, e),
        };
        // A bare host, maybe with a path or a port someone pasted: keep the host.
        let rest = rest.split(['/', '?', '#', '\\']).next().unwrap_or("");
        let rest = match rest.strip_prefix('[') {
            Some(v6) => &rest[..v6.find(']')? + 2],
            None => rest.split(':').next().unwrap_or(""),
        };
        let host = parse_site_host(rest)?;
        if wild && !matches!(host, Host::Domain(_)) {
            return None;
        }
        let host = site_host(&host);
        if host.is_empty() {
            return None;
        }
        Some(if wild { Pattern::Subdomains(host) } else { Pattern::Domain(host) })
    }

    fn matches(&self, url: &Url) -> bool {
        let Some(host) = site_host_of(url) else {
            return false;
        };
        match self {
            Pattern::Domain(d) => host == *d || host.ends_with(&format!(".{d}")),
            Pattern::Subdomains(d) => host.ends_with(&format!(".{d}")),
            Pattern::Origin { scheme, host: h, port } => {
                url.scheme() == scheme && host == *h && url.port_or_known_default() == Some(*port)
            }
        }
    }
}

/// The user's site lists, read once per check from the live settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SitePolicy {
    allow: Vec<(String, Pattern)>,
    /// One task's own allow list, on top of the user's lists.
    task_allow: Vec<(String, Pattern)>,
    deny: Vec<(String, Pattern)>,
    ask_first: Vec<(String, Pattern)>,
}

fn read(list: &[String]) -> Vec<(String, Pattern)> {
    list.iter().filter_map(|e| Pattern::parse(e).map(|p| (e.trim().to_owned(), p))).collect()
}

impl SitePolicy {
    pub fn new(sites: &SitesSection) -> SitePolicy {
        SitePolicy {
            allow: read(&sites.allow),
            deny: read(&sites.deny),
            ask_first: read(&sites.ask_first),
            task_allow: Vec::new(),
        }
    }

    /// Restricts the policy further to `sites` (one task's own list; empty:
    /// no further restriction).
    pub fn only(mut self, sites: &[String]) -> SitePolicy {
        self.task_allow = read(sites);
        self
    }

    /// Whether Errand may open or act on `url`.
    pub fn check(&self, url: &str) -> Result<(), SiteRefusal> {
        let parsed = Url::parse(url.trim()).map_err(|_| SiteRefusal::NotAUrl(url.to_owned()))?;
        if let Some(what) = never(&parsed) {
            return Err(SiteRefusal::Never { url: cut(url), what });
        }
        if parsed.scheme() == "about" {
            return Ok(()); // about:blank, a new tab's first page
        }
        let host = site_host_of(&parsed).unwrap_or_default();
        if let Some((entry, _)) = self.deny.iter().find(|(_, p)| p.matches(&parsed)) {
            return Err(SiteRefusal::Denied { host, entry: entry.clone() });
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|(_, p)| p.matches(&parsed)) {
            return Err(SiteRefusal::NotAllowed { host });
        }
        if !self.task_allow.is_empty() && !self.task_allow.iter().any(|(_, p)| p.matches(&parsed)) {
            let allowed = self.task_allow.iter().map(|(e, _)| e.as_str()).collect::<Vec<_>>();
            return Err(SiteRefusal::NotForThisTask { host, allowed: allowed.join(", ") });
        }
        Ok(())
    }

    /// The ask-first entry `url` falls under, if any.
    pub fn ask_first(&self, url: &str) -> Option<&str> {
        let parsed = Url::parse(url.trim()).ok()?;
        self.ask_first.iter().find(|(_, p)| p.matches(&parsed)).map(|(e, _)| e.as_str())
    }
}

/// What kind of page no task ever touches, if `url` is one.
fn never(url: &Url) -> Option<&'static str> {
    match url.scheme() {
        "http" | "https" => {}
        "about" if url.path() == "blank" || url.path() == "newtab" => return None,
        "chrome" | "chrome-extension" | "chrome-untrusted" | "devtools" | "edge" | "brave"
        | "opera" | "vivaldi" | "chrome-search" | "about" => {
            return Some("the browser's own pages");
        }
        "file" | "filesystem" => return Some("local files"),
        "javascript" => return Some("script addresses"),
        "data" | "blob" => return Some("data addresses"),
        "view-source" => return Some("page sources"),
        _ => return Some("addresses that are not web pages"),
    }
    let host = site_host_of(url).unwrap_or_default();
    let path = url.path().to_ascii_lowercase();
    // One list with the side panel's (extension/generated/rules.js).
    errand_protocol::rules_js::is_store_page(&host, &path).then_some("the extension stores")
}

fn cut(url: &str) -> String {
    crate::text::cut(url, 120)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow: &[&str], deny: &[&str], ask: &[&str]) -> SitePolicy {
        let v = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect();
        SitePolicy::new(&SitesSection { allow: v(allow), deny: v(deny), ask_first: v(ask) })
    }

    #[test]
    fn never_touches_the_browser_files_scripts_or_the_store() {
        let p = SitePolicy::default();
        for url in [
            "chrome://settings",
            "chrome-extension://abc/panel.html",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "data:text/html,<b>x</b>",
            "view-source:https://a.example",
            "https://chromewebstore.google.com/detail/x",
            "https://chrome.google.com/webstore/category/extensions",
            "https://microsoftedge.microsoft.com/addons/detail/x",
            "edge://flags",
            "about:settings",
        ] {
            assert!(matches!(p.check(url), Err(SiteRefusal::Never { .. })), "{url}");
        }
        assert_eq!(p.check("https://chrome.google.com/search"), Ok(()));
        assert_eq!(p.check("about:blank"), Ok(()));
        assert_eq!(p.check("http://127.0.0.1:8080/form"), Ok(()));
        assert!(matches!(p.check("not a url"), Err(SiteRefusal::NotAUrl(_))));
    }

    #[test]
    fn deny_wins_and_allow_restricts() {
        let p = policy(&["shop.example", "*.bank.example"], &["ads.shop.example"], &[]);
        assert_eq!(p.check("https://shop.example/cart"), Ok(()));
        assert_eq!(p.check("https://www.shop.example/"), Ok(()));
        assert!(matches!(
            p.check("https://ads.shop.example/x"),
            Err(SiteRefusal::Denied { entry, .. }) if entry == "ads.shop.example"
        ));
        assert_eq!(p.check("https://online.bank.example/"), Ok(()));
        assert!(matches!(p.check("https://bank.example/"), Err(SiteRefusal::NotAllowed { .. })));
        assert!(matches!(
            p.check("https://evil.example/"),
            Err(SiteRefusal::NotAllowed { host, .. }) if host == "evil.example"
        ));
        // Look-alikes are not subdomains.
        assert!(p.check("https://notshop.example/").is_err());
    }

    #[test]
    fn a_task_can_be_kept_to_its_own_sites() {
        let p = policy(&[], &["ads.shop.example"], &[]).only(&["shop.example".into()]);
        assert_eq!(p.check("https://www.shop.example/"), Ok(()));
        assert!(matches!(p.check("https://ads.shop.example/"), Err(SiteRefusal::Denied { .. })));
        let e = p.check("https://news.example/").unwrap_err();
        assert!(e.to_string().contains("this task may only use shop.example"), "{e}");
    }

    #[test]
    fn origins_match_exactly() {
        let p = policy(&["https://pay.example", "http://127.0.0.1:8080/"], &[], &[]);
        assert_eq!(p.check("https://pay.example:443/x"), Ok(()));
        assert!(p.check("http://pay.example/").is_err());
        assert_eq!(p.check("http://127.0.0.1:8080/form.html"), Ok(()));
        assert!(p.check("http://127.0.0.1:9090/").is_err());
    }

    #[test]
    fn every_spelling_of_a_denied_host_is_refused() {
        let p = policy(&[], &["localhost", "127.0.0.1", "[::1]", "bücher.example"], &[]);
        for url in [
            "http://localhost/",
            "http://localhost.:8080/",
            "http://LOCALHOST.:8080/x",
            "http://LocalHost/",
            "http://api.localhost./",
            "http://%6cocalhost/",
            "http://ｌｏｃａｌｈｏｓｔ/",
            "http://127.0.0.1:9/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://0x7F000001/",
            "http://127.1/",
            "http://0177.0.0.1/",
            "http://127.0.0.1./",
            "http://[::1]:8080/",
            "http://[0:0:0:0:0:0:0:1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "https://bücher.example/",
            "https://BÜCHER.example./",
            "https://xn--bcher-kva.example/",
            "https://www.xn--BCHER-kva.example/",
        ] {
            assert!(matches!(p.check(url), Err(SiteRefusal::Denied { .. })), "{url}");
        }
        assert_eq!(p.check("http://127.0.0.2/"), Ok(()));
        assert_eq!(p.check("http://notlocalhost/"), Ok(()));
        assert_eq!(p.check("https://buecher.example/"), Ok(()));
    }

    #[test]
    fn every_spelling_of_an_entry_is_one() {
        // Entries written any way match every spelling of their host.
        let p = policy(
            &[],
            &[
                "LOCALHOST.",
                "*.Example.COM.",
                "Bücher.Example",
                "0x7f.1",
                "[0:0:0:0:0:0:0:1]",
                "HTTP://Shop.Example.:8080/",
                "[::ffff:10.0.0.1]",
            ],
            &[],
        );
        for (url, entry) in [
            ("http://localhost./", "LOCALHOST."),
            ("http://www.example.com./", "*.Example.COM."),
            ("https://xn--bcher-kva.example/", "Bücher.Example"),
            ("http://127.0.0.1/", "0x7f.1"),
            ("http://[::1]/", "[0:0:0:0:0:0:0:1]"),
            ("http://shop.example:8080/", "HTTP://Shop.Example.:8080/"),
            ("http://SHOP.example.:8080/cart", "HTTP://Shop.Example.:8080/"),
            ("http://10.0.0.1/", "[::ffff:10.0.0.1]"),
        ] {
            assert!(
                matches!(p.check(url), Err(SiteRefusal::Denied { entry: e, .. }) if e == entry),
                "{url}: {:?}",
                p.check(url)
            );
        }
        // A wildcard is still the subdomains only, an origin its own port.
        assert_eq!(p.check("http://example.com/"), Ok(()));
        assert_eq!(p.check("http://shop.example:8081/"), Ok(()));
        // The allow list and a task's own list compare the same way.
        let p = policy(&["Shop.Example."], &[], &[]).only(&["SHOP.example".into()]);
        assert_eq!(p.check("https://shop.example./"), Ok(()));
        assert_eq!(p.check("https://WWW.Shop.Example/"), Ok(()));
        assert!(matches!(
            p.check("https://shop.example.evil/"),
            Err(SiteRefusal::NotAllowed { .. })
        ));
        // Ask-first too.
        let p = policy(&[], &[], &["bank.example"]);
        assert_eq!(p.ask_first("https://BANK.example./pay"), Some("bank.example"));
        // Entries that are no host are dropped, not read as something else.
        for junk in ["*.127.0.0.1", "*.[::1]", "[::1", "", "*."] {
            assert_eq!(Pattern::parse(junk), None, "{junk}");
        }
        // The stores are the stores, however written.
        let p = SitePolicy::default();
        assert!(matches!(
            p.check("https://ChromeWebStore.Google.Com./detail/x"),
            Err(SiteRefusal::Never { .. })
        ));
    }

    #[test]
    fn ask_first_names_its_entry() {
        let p = policy(&[], &[], &["Bank.Example/"]);
        assert_eq!(p.ask_first("https://www.bank.example/pay"), Some("Bank.Example/"));
        assert_eq!(p.ask_first("https://shop.example/"), None);
        let msg = policy(&[], &["evil.example"], &[])
            .check("https://evil.example/")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("must not use"), "{msg}");
    }
}
