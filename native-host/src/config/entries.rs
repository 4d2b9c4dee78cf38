//! The entries of the site lists, and the API key as shown.

/// Reads one `[sites]` entry as the site lists understand it, normalised:
/// a host name (`example.com`: that host and its subdomains), a wildcard
/// (`*.bank.example`: the subdomains only) or an origin
/// (`https://shop.example:8443`: exactly that scheme, host and port).
/// Lower case, international names in their ASCII form, no trailing `/`.
/// The error says what is wrong, for a message naming the entry.
pub fn normalize_site(entry: &str) -> Result<String, &'static str> {
    let e = entry.trim();
    if e.is_empty() {
        return Err("it is empty");
    }
    if e.contains("://") {
        return normalize_origin(e);
    }
    let e = e.strip_suffix('/').unwrap_or(e);
    let (wild, rest) = match e.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, e),
    };
    if rest.contains('*') {
        return Err("`*` may only begin an entry, as in *.example.com");
    }
    if rest.contains(['/', '?', '#']) {
        return Err("a site is a host name without a path, like example.com");
    }
    if rest.contains(':') || rest.contains('@') {
        return Err(
            "a host name has no port: for one port, write an origin like http://localhost:8080",
        );
    }
    let host = url::Host::parse(rest).map_err(|_| "it is not a host name")?;
    match host {
        url::Host::Domain(d) => {
            let label_ok = |l: &str| {
                !l.is_empty()
                    && l.len() <= 63
                    && !l.starts_with('-')
                    && !l.ends_with('-')
                    && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            };
            if d.len() > 253 || !d.split('.').all(label_ok) {
                return Err("it is not a host name");
            }
            Ok(if wild { format!("*.{d}") } else { d })
        }
        url::Host::Ipv4(ip) if !wild && ip.to_string() == rest => Ok(rest.to_owned()),
        url::Host::Ipv4(_) if wild => Err("`*.` goes before a domain name, not an IP address"),
        _ => Err("it is not a host name"),
    }
}

/// `scheme://host[:port]` of an http(s) origin, the default port left out.
pub(super) fn normalize_origin(e: &str) -> Result<String, &'static str> {
    use crate::origin::{NotAnOrigin, Origin};
    Origin::web(e, true).map(Origin::into_string).map_err(|why| match why {
        NotAnOrigin::NotAUrl => "it is not a web address",
        NotAnOrigin::NotWeb => "only http and https sites can be listed",
        NotAnOrigin::Credentials => "a site has no user name or password",
        NotAnOrigin::Path => "a site is a whole origin, without a path: like https://shop.example",
        NotAnOrigin::NoHost => "it has no host",
    })
}

/// Shows enough of a key to recognise it: `sk-…f00d`.
pub fn mask_key(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() < 12 {
        return "****".to_owned();
    }
    let head: String = chars[..3].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}…{tail}")
}
