//! Host and Origin validation: the HTTP server's defence against DNS rebinding.
//!
//! A request is served only when its `Host` names this server (loopback by default, plus the
//! names a deployment allows), and, when it carries an `Origin`, that origin's host is allowed
//! too (or the origin is listed exactly). Anything else gets 403 before authentication runs, with
//! a body naming the refused value and the setting that would allow it.
//!
//! The probes `/health` and `/ready` are not checked (ADR 0029): load balancers and orchestrators
//! send the machine's address as `Host`, and these two routes reveal nothing a rebinding page
//! could use.

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The probe routes, answered whatever the `Host` and `Origin` (ADR 0029).
const PROBES: [&str; 2] = ["/health", "/ready"];

/// One allowed host name, with an optional port (an entry without a port allows any port).
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostEntry {
    host: String,
    port: Option<u16>,
}

/// Why an `ALLOWED_HOSTS` or `ALLOWED_ORIGINS` entry was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a host name (optionally with :port): {0:?}")]
pub struct AllowedHostError(String);

/// The hosts and origins this server answers to.
#[derive(Debug, Clone)]
pub struct RequestGuard {
    hosts: Vec<HostEntry>,
    origins: Vec<String>,
}

impl RequestGuard {
    /// Loopback only: `localhost`, `127.0.0.1` and `::1`, on any port.
    #[must_use]
    pub fn loopback() -> Self {
        let hosts =
            ["localhost", "127.0.0.1", "::1"].map(|host| HostEntry { host: host.to_owned(), port: None }).to_vec();
        Self { hosts, origins: Vec::new() }
    }

    /// Also allows these hosts (`name` or `name:port`, `[v6]:port` for IPv6).
    ///
    /// # Errors
    /// [`AllowedHostError`] for an entry that is not a host name.
    pub fn with_hosts<'a>(mut self, hosts: impl IntoIterator<Item = &'a str>) -> Result<Self, AllowedHostError> {
        for entry in hosts.into_iter().map(str::trim).filter(|entry| !entry.is_empty()) {
            let (host, port) = split_host_port(entry).ok_or_else(|| AllowedHostError(entry.to_owned()))?;
            if host.is_empty() || host.contains(['/', '*', ' ', '@']) {
                return Err(AllowedHostError(entry.to_owned()));
            }
            self.hosts.push(HostEntry { host, port });
        }
        Ok(self)
    }

    /// Also allows these exact origins (`https://app.example.com`), whatever their host.
    #[must_use]
    pub fn with_origins<'a>(mut self, origins: impl IntoIterator<Item = &'a str>) -> Self {
        self.origins.extend(
            origins
                .into_iter()
                .map(|origin| origin.trim().trim_end_matches('/').to_ascii_lowercase())
                .filter(|origin| !origin.is_empty()),
        );
        self
    }

    fn allows_host(&self, host: &str, port: Option<u16>) -> bool {
        self.hosts.iter().any(|entry| entry.host == host && (entry.port.is_none() || entry.port == port))
    }

    /// Both checks of a non-probe route (what the middleware does, for the unit tests).
    #[cfg(test)]
    fn check(&self, headers: &HeaderMap, uri_authority: Option<&str>) -> Result<(), Refusal> {
        check_single_headers(headers)?;
        self.check_allowed(headers, uri_authority)
    }

    fn check_allowed(&self, headers: &HeaderMap, uri_authority: Option<&str>) -> Result<(), Refusal> {
        // An absolute-form target (`POST http://host/mcp`) names the host that counts (RFC 9112
        // 3.2.2): it must be allowed, and so must the Host header beside it.
        if let Some(authority) = uri_authority {
            let refused = || Refusal::Forbidden(Forbidden::host("request target host is not allowed", authority));
            let (host, port) = split_host_port(authority).ok_or_else(refused)?;
            if !self.allows_host(&host, port) {
                return Err(refused());
            }
        }
        let host = match headers.get(header::HOST) {
            Some(value) => value.to_str().map_err(|_| {
                Refusal::Forbidden(Forbidden::host(
                    "Host header is not valid",
                    &String::from_utf8_lossy(value.as_bytes()),
                ))
            })?,
            None => uri_authority.ok_or(Refusal::Forbidden(Forbidden::host("Host header is missing", "")))?,
        };
        let refused = || Refusal::Forbidden(Forbidden::host("Host header is not allowed", host));
        let (host_name, port) = split_host_port(host).ok_or_else(refused)?;
        if !self.allows_host(&host_name, port) {
            return Err(refused());
        }
        match headers.get(header::ORIGIN) {
            None => Ok(()),
            Some(origin) if self.allows_origin(origin) => Ok(()),
            Some(origin) => Err(Refusal::Forbidden(Forbidden::origin(&String::from_utf8_lossy(origin.as_bytes())))),
        }
    }

    /// True when a browser page at `origin` may call this server: the origin is listed in
    /// `ALLOWED_ORIGINS`, or is `http`/`https` on an allowed host. The CORS layer answers the same
    /// origins the guard lets through.
    pub(crate) fn allows_origin(&self, origin: &HeaderValue) -> bool {
        let Ok(origin) = origin.to_str() else {
            return false;
        };
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        if self.origins.contains(&origin) {
            return true;
        }
        let Some((scheme, authority)) = origin.split_once("://") else {
            return false;
        };
        let default_port = match scheme {
            "http" => 80,
            "https" => 443,
            _ => return false,
        };
        split_host_port(authority)
            .is_some_and(|(host, port)| self.allows_host(&host, Some(port.unwrap_or(default_port))))
    }

    /// True when only loopback names are allowed (no `ALLOWED_HOSTS` entry).
    #[must_use]
    pub fn loopback_only(&self) -> bool {
        self.hosts.iter().all(|entry| is_loopback_host(&entry.host))
    }
}

/// True for `localhost` and loopback IP addresses (`127.0.0.1`, `::1`, `[::1]`).
#[must_use]
pub fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The start-up warning for a server listening beyond loopback while answering only loopback
/// names: every request from another machine (probes included, but for `/health` and `/ready`)
/// would get 403. `None` when there is nothing to warn about, and in a `container`: there a
/// wildcard `HOST` is the container's own interface, reached only through the ports the operator
/// published, and one published on the host's loopback (`-p 127.0.0.1:3000:3000`, as the README
/// shows) brings `Host: 127.0.0.1:3000`, which is served. A port published to other machines
/// shows itself at the first request that names this server otherwise: each refused `Host` is
/// logged as a warning naming `ALLOWED_HOSTS` (ADR 0029, amended).
#[must_use]
pub fn exposure_warning(
    listen_host: &str,
    guard: &RequestGuard,
    container: Option<mcp_server::container::Container>,
) -> Option<String> {
    (!is_loopback_host(listen_host) && guard.loopback_only() && container.is_none()).then(|| {
        format!(
            "HOST={listen_host} listens beyond loopback but ALLOWED_HOSTS is empty: /mcp answers 403 to every \
             request whose Host is not localhost, 127.0.0.1 or ::1 (/health and /ready answer any Host). \
             Set ALLOWED_HOSTS to the names clients use (cursos.example.com,10.0.0.5)"
        )
    })
}

/// 400 for a repeated `Host` or `Origin` (RFC 9112 3.2), on every route, probes included.
fn check_single_headers(headers: &HeaderMap) -> Result<(), Refusal> {
    for name in [header::HOST, header::ORIGIN] {
        if headers.get_all(&name).iter().nth(1).is_some() {
            // Which one counts would be up to each hop of a proxy chain: none does.
            return Err(Refusal::Ambiguous(if name == header::HOST {
                "more than one Host header"
            } else {
                "more than one Origin header"
            }));
        }
    }
    Ok(())
}

/// A 403: what was refused, the value seen (bounded), and the setting that would allow it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Forbidden {
    reason: &'static str,
    /// `"Host"` or `"Origin"`.
    header: &'static str,
    value: String,
    setting: &'static str,
}

/// The longest refused value echoed back or logged.
const MAX_ECHOED_CHARS: usize = 200;

impl Forbidden {
    fn host(reason: &'static str, value: &str) -> Self {
        Self { reason, header: "Host", value: bounded(value), setting: "ALLOWED_HOSTS" }
    }

    fn origin(value: &str) -> Self {
        Self {
            reason: "Origin header is not allowed",
            header: "Origin",
            value: bounded(value),
            setting: "ALLOWED_ORIGINS",
        }
    }

    fn into_response(self) -> Response {
        tracing::warn!(
            target: "backend::guard",
            reason = self.reason,
            refused = %self.value,
            setting = self.setting,
            "request refused by the Host/Origin check"
        );
        let message = if self.header == "Host" {
            format!(
                "Host {value:?} is not allowed ({reason}); to serve it, add it to ALLOWED_HOSTS (comma-separated host names)",
                value = self.value,
                reason = self.reason,
            )
        } else {
            format!(
                "Origin {value:?} is not allowed; to serve it, add it to ALLOWED_ORIGINS, or its host to ALLOWED_HOSTS",
                value = self.value,
            )
        };
        let field = if self.header == "Host" { "host" } else { "origin" };
        let mut fields = serde_json::Map::new();
        fields.insert(field.to_owned(), serde_json::Value::from(self.value));
        fields.insert("setting".to_owned(), serde_json::Value::from(self.setting));
        super::refusal::jsonrpc_refusal(StatusCode::FORBIDDEN, "forbidden", &message, fields)
    }
}

fn bounded(value: &str) -> String {
    value.chars().take(MAX_ECHOED_CHARS).collect()
}

/// Why a request was refused before authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Refusal {
    /// 400: a header that must appear once appears more often.
    Ambiguous(&'static str),
    /// 403: a host or origin this server does not answer to.
    Forbidden(Forbidden),
}

/// Splits `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address; the host is lowercased.
fn split_host_port(text: &str) -> Option<(String, Option<u16>)> {
    let text = text.trim();
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':')?.parse().ok()?)),
        }
    } else if text.matches(':').count() == 1 {
        let (host, port) = text.split_once(':')?;
        (host, Some(port.parse().ok()?))
    } else {
        (text, None)
    };
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

/// The refusal of a request, if it gets one: 400 for a repeated Host or Origin header, 403 unless
/// Host, the request target's host (absolute form) and Origin (when present) are allowed. `/health` and `/ready`
/// answer whatever the Host and Origin (ADR 0029); only a repeated header is refused there.
pub(crate) fn refusal_of(guard: &RequestGuard, request: &Request) -> Option<Response> {
    let authority = request.uri().authority().map(axum::http::uri::Authority::as_str);
    let checked = match check_single_headers(request.headers()) {
        Ok(()) if PROBES.contains(&request.uri().path()) => Ok(()),
        Ok(()) => guard.check_allowed(request.headers(), authority),
        Err(refusal) => Err(refusal),
    };
    match checked {
        Ok(()) => None,
        Err(Refusal::Ambiguous(reason)) => {
            tracing::warn!(target: "backend::guard", reason, "request refused by the Host/Origin check");
            Some(
                (StatusCode::BAD_REQUEST, axum::Json(serde_json::json!({ "error": format!("Bad Request: {reason}") })))
                    .into_response(),
            )
        }
        Err(Refusal::Forbidden(forbidden)) => Some(forbidden.into_response()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(host: Option<&str>, origin: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(host) = host {
            headers.insert(header::HOST, HeaderValue::from_str(host).expect("header"));
        }
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, HeaderValue::from_str(origin).expect("header"));
        }
        headers
    }

    #[test]
    fn loopback_hosts_are_allowed_on_any_port() {
        let guard = RequestGuard::loopback();
        for host in ["127.0.0.1:3000", "localhost", "LOCALHOST:8080", "[::1]:3000", "127.0.0.1"] {
            assert_eq!(guard.check(&headers(Some(host), None), None), Ok(()), "{host}");
        }
    }

    #[test]
    fn a_foreign_host_is_refused_unless_allowed() {
        let guard = RequestGuard::loopback();
        assert!(guard.check(&headers(Some("evil.example.com"), None), None).is_err());
        assert!(guard.check(&headers(Some("127.0.0.1.evil.example.com:3000"), None), None).is_err());
        let widened = guard.with_hosts(["cursos.example.com", "api.example.com:8443"]).expect("valid");
        assert_eq!(widened.check(&headers(Some("cursos.example.com:3000"), None), None), Ok(()));
        assert_eq!(widened.check(&headers(Some("api.example.com:8443"), None), None), Ok(()));
        assert!(widened.check(&headers(Some("api.example.com:9999"), None), None).is_err());
    }

    #[test]
    fn a_missing_host_falls_back_to_the_request_target_authority() {
        let guard = RequestGuard::loopback();
        assert_eq!(guard.check(&headers(None, None), Some("127.0.0.1:3000")), Ok(()));
        assert!(guard.check(&headers(None, None), None).is_err());
    }

    #[test]
    fn an_origin_must_name_an_allowed_host_or_be_listed() {
        let guard = RequestGuard::loopback().with_origins(["https://app.example.com/"]);
        let loopback = Some("127.0.0.1:3000");
        assert_eq!(guard.check(&headers(loopback, Some("http://localhost:6274")), None), Ok(()));
        assert_eq!(guard.check(&headers(loopback, Some("https://app.example.com")), None), Ok(()));
        for origin in
            ["https://evil.example.com", "null", "file://", "chrome-extension://abc", "http://127.0.0.1.evil.com"]
        {
            assert!(guard.check(&headers(loopback, Some(origin)), None).is_err(), "{origin}");
        }
    }

    #[test]
    fn a_repeated_host_or_origin_is_ambiguous_whichever_comes_first() {
        let guard = RequestGuard::loopback();
        for (name, first, second) in [
            (header::HOST, "127.0.0.1:3000", "evil.example.com"),
            (header::HOST, "127.0.0.1:3000", "127.0.0.1:3000"),
            (header::ORIGIN, "http://localhost:3000", "https://evil.example.com"),
        ] {
            let mut headers = headers(Some("127.0.0.1:3000"), None);
            headers.remove(&name);
            headers.append(&name, HeaderValue::from_static(first));
            headers.append(&name, HeaderValue::from_static(second));
            assert!(matches!(guard.check(&headers, None), Err(Refusal::Ambiguous(_))), "{name}: {first}, {second}");
        }
    }

    #[test]
    fn an_absolute_form_target_must_name_an_allowed_host_too() {
        let guard = RequestGuard::loopback();
        let loopback = headers(Some("127.0.0.1:3000"), None);
        assert!(matches!(guard.check(&loopback, Some("evil.example")), Err(Refusal::Forbidden(_))));
        assert!(matches!(guard.check(&loopback, Some("user@127.0.0.1:3000")), Err(Refusal::Forbidden(_))));
        assert_eq!(guard.check(&loopback, Some("localhost:3000")), Ok(()));
        let foreign = headers(Some("evil.example"), None);
        assert!(matches!(guard.check(&foreign, Some("127.0.0.1:3000")), Err(Refusal::Forbidden(_))));
    }

    #[test]
    fn an_allowed_hosts_entry_must_be_a_host_name() {
        for entry in ["http://x.com", "*", "a b", "x.com:porta", "[::1"] {
            assert!(RequestGuard::loopback().with_hosts([entry]).is_err(), "{entry}");
        }
    }

    #[test]
    fn a_refusal_names_the_refused_host_or_origin_and_the_setting_that_allows_it() {
        let guard = RequestGuard::loopback();
        let Err(Refusal::Forbidden(host)) = guard.check(&headers(Some("10.0.0.5:3000"), None), None) else {
            panic!("a foreign host is refused");
        };
        assert_eq!((host.header, host.value.as_str(), host.setting), ("Host", "10.0.0.5:3000", "ALLOWED_HOSTS"));
        let Err(Refusal::Forbidden(origin)) =
            guard.check(&headers(Some("localhost:3000"), Some("https://app.example.com")), None)
        else {
            panic!("a foreign origin is refused");
        };
        assert_eq!(
            (origin.header, origin.value.as_str(), origin.setting),
            ("Origin", "https://app.example.com", "ALLOWED_ORIGINS")
        );
        let long = format!("{}.example.com", "a".repeat(1000));
        let Err(Refusal::Forbidden(long_host)) = guard.check(&headers(Some(&long), None), None) else {
            panic!("refused");
        };
        assert_eq!(long_host.value.chars().count(), MAX_ECHOED_CHARS, "what is echoed is bounded");
    }

    #[test]
    fn listening_beyond_loopback_without_allowed_hosts_is_warned_about() {
        let loopback = RequestGuard::loopback();
        let widened = RequestGuard::loopback().with_hosts(["cursos.example.com"]).expect("valid");
        for host in ["0.0.0.0", "::", "10.0.0.5", "cursos.example.com"] {
            let warning = exposure_warning(host, &loopback, None).expect("a warning");
            assert!(warning.contains("ALLOWED_HOSTS") && warning.contains(host), "{warning}");
            assert_eq!(exposure_warning(host, &widened, None), None, "{host} with ALLOWED_HOSTS");
        }
        for host in ["127.0.0.1", "::1", "[::1]", "localhost"] {
            assert_eq!(exposure_warning(host, &loopback, None), None, "{host}");
        }
    }

    #[test]
    fn a_wildcard_host_in_a_container_is_not_warned_about_at_start() {
        use mcp_server::container::Container;
        // The image's HOST=0.0.0.0 behind `-p 127.0.0.1:3000:3000`: clients send a loopback Host.
        for container in [Container::Podman, Container::Docker] {
            assert_eq!(exposure_warning("0.0.0.0", &RequestGuard::loopback(), Some(container)), None);
        }
        let published = headers(Some("127.0.0.1:3000"), None);
        assert_eq!(RequestGuard::loopback().check(&published, None), Ok(()));
    }
}
