//! The entries of the site lists, and the API key as shown.

/// Reads one `[sites]` entry as the site lists understand it, normalised:
/// a host name (`example.com`: that host and its subdomains), a wildcard
/// (`*.bank.example`: the subdomains only) or an origin
/// (`https://shop.example:8443`: exactly that scheme, host and port).
/// Lower case, international names in their ASCII form, no trailing dot
/// nor `/`, hosts as the site lists compare them
/// ([`crate::origin::site_host`]: `LOCALHOST.` is `localhost`,
/// `[::ffff:127.0.0.1]` is `127.0.0.1`). An IPv4 address is written dotted
/// (`127.1` is refused here as a likely typo; the lists would read it as
/// `127.0.0.1`). The error says what is wrong, for a message naming the
/// entry.
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
    let bracketed = rest.starts_with('[') && rest.ends_with(']');
    if (rest.contains(':') && !bracketed) || rest.contains('@') {
        return Err(
            "a host name has no port: for one port, write an origin like http://localhost:8080",
        );
    }
    let host = crate::origin::parse_site_host(rest).ok_or("it is not a host name")?;
    let normal = crate::origin::site_host(&host);
    match host {
        url::Host::Domain(_) => {
            let d = normal;
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
        url::Host::Ipv4(_) | url::Host::Ipv6(_) if wild => {
            Err("`*.` goes before a domain name, not an IP address")
        }
        url::Host::Ipv4(ip) if ip.to_string() == rest.trim_end_matches('.') => Ok(normal),
        url::Host::Ipv6(_) => Ok(normal),
        url::Host::Ipv4(_) => Err("it is not a host name"),
    }
}

/// `scheme://host[:port]` of an http(s) origin, the default port left out.
pub(super) fn normalize_origin(e: &str) -> Result<String, &'static str> {
    use crate::origin::{NotAnOrigin, Origin};
    let origin = Origin::web(e, true).map_err(|why| match why {
        NotAnOrigin::NotAUrl => "it is not a web address",
        NotAnOrigin::NotWeb => "only http and https sites can be listed",
        NotAnOrigin::Credentials => "a site has no user name or password",
        NotAnOrigin::Path => "a site is a whole origin, without a path: like https://shop.example",
        NotAnOrigin::NoHost => "it has no host",
    })?;
    // The host as the site lists compare it (`https://LOCALHOST.:8443` is
    // `https://localhost:8443`).
    let url = url::Url::parse(origin.as_str()).map_err(|_| "it is not a web address")?;
    let host =
        crate::origin::site_host_of(&url).filter(|h| !h.is_empty()).ok_or("it has no host")?;
    Ok(match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
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
