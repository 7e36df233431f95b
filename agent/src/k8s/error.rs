//! Errors of talking to an API server, rendered on one line the way kubectl words them.
//!
//! kube's own errors print their cause in their message and return it from `source()` as well,
//! and its API error prints the server's `Status` with `Debug`. Every error chain that may hold
//! a kube error is therefore rendered by [`one_line`], which words a kube error (and a
//! kube-runtime watcher error) itself and stops there. Each error of this module either says its
//! cause in its message and returns no source ([`ClusterError`], [`RequestError`]) or returns its
//! cause without saying it ([`ConnectFailed`]), so any renderer prints a cause once.

use super::api::ApiStatus;
use std::error::Error as StdError;
use std::fmt;

/// The most characters of a server's message kept in one line (a proxy may answer a whole HTML
/// page).
const MAX_MESSAGE: usize = 300;

/// The API server's base URL (`cluster.server` of the kubeconfig, or the in-cluster address).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server(http::Uri);

impl Server {
    /// The server at `uri`.
    pub fn new(uri: http::Uri) -> Server {
        Server(uri)
    }

    /// The full URL of a request whose path and query kube built (`/apis/...?limit=500`): the
    /// server's scheme, authority and path prefix (a proxy's `/k8s/clusters/c-1`), then the
    /// request's path and query, as kube's client joins them. Empty query pairs (kube's query
    /// builder starts with a `&`: `?&limit=500`) are left out, as kubectl writes the URL.
    pub fn url_of(&self, path_and_query: &str) -> String {
        let (path, query) = path_and_query
            .split_once('?')
            .unwrap_or((path_and_query, ""));
        let pairs: Vec<&str> = query.split('&').filter(|p| !p.is_empty()).collect();
        if pairs.is_empty() {
            format!("{self}{path}")
        } else {
            format!("{self}{path}?{}", pairs.join("&"))
        }
    }
}

impl fmt::Display for Server {
    /// `https://host:port`, with the path prefix when there is one, without a trailing `/`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = self.0.scheme_str() {
            write!(f, "{s}://")?;
        }
        if let Some(a) = self.0.authority() {
            write!(f, "{a}")?;
        }
        f.write_str(self.0.path().trim_end_matches('/'))
    }
}

/// A request that never reached the server, naming the server (kube's connection error does
/// not). The client's counting layer wraps every such error in one.
#[derive(Debug, thiserror::Error)]
#[error("cannot connect to {server}")]
pub struct ConnectFailed {
    /// The server's URL.
    pub server: String,
    /// The connection's error.
    #[source]
    pub source: tower::BoxError,
}

impl ConnectFailed {
    /// `e` wrapped when it is a failure to connect, else `e`.
    pub fn wrap(e: tower::BoxError, server: String) -> tower::BoxError {
        if is_connect(e.as_ref()) {
            Box::new(ConnectFailed { server, source: e })
        } else {
            e
        }
    }
}

/// Whether an error chain holds a failure to connect (hyper's client error of the connector).
fn is_connect(e: &(dyn StdError + 'static)) -> bool {
    causes(e).any(|c| {
        c.downcast_ref::<hyper_util::client::legacy::Error>()
            .is_some_and(hyper_util::client::legacy::Error::is_connect)
    })
}

/// A request of the offline commands' live source that failed.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The server answered with an error status (`kubectl`: `Error from server (Forbidden): ...
    /// (GET https://...)`).
    #[error("{} ({method} {url})", server_error(status))]
    Server {
        /// The request's method.
        method: http::Method,
        /// The request's full URL.
        url: String,
        /// The answer's status.
        status: ApiStatus,
    },
    /// No connection to the server could be made (refused, unreachable, timed out, TLS).
    #[error(
        "cannot connect to {server} ({cause}): is the cluster reachable? Choose another with --context NAME or --kubeconfig PATH"
    )]
    Unreachable {
        /// The server.
        server: String,
        /// Why, in a few words (`connection refused`).
        cause: String,
    },
    /// Anything else: an answer that does not decode, a request kube could not build.
    #[error("{method} {url}: {}", describe(error))]
    Other {
        /// The request's method.
        method: http::Method,
        /// The request's full URL.
        url: String,
        /// kube's error.
        error: kube::Error,
    },
}

impl RequestError {
    /// The error of `method` on `path_and_query` of `server`.
    pub fn new(
        server: &Server,
        method: http::Method,
        path_and_query: &str,
        error: kube::Error,
    ) -> RequestError {
        let url = server.url_of(path_and_query);
        if let Some(status) = super::api::api_status(&error) {
            return RequestError::Server {
                method,
                url,
                status,
            };
        }
        match connect_failure(&error) {
            Some(cause) => RequestError::Unreachable {
                server: server.to_string(),
                cause,
            },
            None => RequestError::Other { method, url, error },
        }
    }

    /// The HTTP status of the server's answer, when one came.
    pub fn code(&self) -> Option<u16> {
        match self {
            RequestError::Server { status, .. } => Some(status.code),
            RequestError::Unreachable { .. } | RequestError::Other { .. } => None,
        }
    }
}

/// Why the offline commands' live source read nothing: no client configuration, or a request
/// that failed. Each message names the kubeconfig file at most once.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A kubeconfig file could not be read.
    #[error("cannot read kubeconfig {path}: {error}")]
    ReadKubeconfig {
        /// The file.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// A kubeconfig does not make a client configuration (it does not parse, names a cluster
    /// that does not exist, a certificate that cannot be read).
    #[error("kubeconfig {path}: {}", first_line(&one_line(error)))]
    Kubeconfig {
        /// The file, or the files of `$KUBECONFIG`.
        path: String,
        /// kube's error.
        error: kube::config::KubeconfigError,
    },
    /// The context asked for (with `--context`, else the kubeconfig's current one) is not in
    /// the kubeconfig.
    #[error(
        "{}context \"{name}\" is not in {path}; {}",
        which(.current),
        its_contexts(contexts)
    )]
    UnknownContext {
        /// The context.
        name: String,
        /// Whether it is the kubeconfig's `current-context` (no `--context` was given).
        current: bool,
        /// The file, or the files of `$KUBECONFIG`.
        path: String,
        /// The contexts the kubeconfig holds.
        contexts: Vec<String>,
    },
    /// No kubeconfig file could be found.
    #[error("no kubeconfig: $KUBECONFIG is empty and there is no home directory")]
    NoKubeconfig,
    /// The in-cluster service account could not be read.
    #[error("in-cluster configuration: {}", one_line(error))]
    InCluster {
        /// kube's error.
        error: kube::config::InClusterError,
    },
    /// Neither a kubeconfig nor the in-cluster service account was found.
    #[error("no Kubernetes configuration found ({error})")]
    Infer {
        /// kube's error (it names both attempts).
        error: kube::config::InferConfigError,
    },
    /// kube could not make a client of the configuration (its TLS settings).
    #[error("cannot build the Kubernetes client: {}", describe(error))]
    Build {
        /// kube's error.
        error: kube::Error,
    },
    /// The async runtime of the offline commands could not start.
    #[error("cannot start the async runtime: {error}")]
    Runtime {
        /// Why.
        error: std::io::Error,
    },
    /// Every LIST answered 404: the server serves none of the kinds, Nodes included.
    #[error(
        "{server} serves none of the kinds this tool reads (every LIST answered 404): is it a Kubernetes API server?"
    )]
    NothingServed {
        /// The server.
        server: String,
    },
    /// A request failed.
    #[error(transparent)]
    Request(#[from] RequestError),
}

/// `the current ` for the kubeconfig's current context.
fn which(current: &bool) -> &'static str {
    if *current { "the current " } else { "" }
}

/// `its contexts: a, b`, or `it holds no context`.
fn its_contexts(contexts: &[String]) -> String {
    if contexts.is_empty() {
        "it holds no context".to_string()
    } else {
        format!("its contexts: {}", contexts.join(", "))
    }
}

/// `Error from server (Reason): message`, as kubectl words an API status. A reason that is not
/// one word (kube's stand-in when the body was not a `Status`, such as a proxy's page) gives way
/// to the HTTP status's name; an empty message to the HTTP status.
pub fn server_error(s: &ApiStatus) -> String {
    let http = http::StatusCode::from_u16(s.code).ok();
    let is_word = !s.reason.is_empty() && s.reason.chars().all(|c| c.is_ascii_alphanumeric());
    let reason = if is_word {
        Some(s.reason.clone())
    } else {
        http.and_then(|h| h.canonical_reason())
            .map(|r| r.split_whitespace().collect::<String>())
    };
    let message = if s.message.trim().is_empty() {
        match http {
            Some(h) => format!("the server answered {h}"),
            None => format!("the server answered {}", s.code),
        }
    } else {
        single_line(&s.message)
    };
    match reason {
        Some(r) => format!("Error from server ({r}): {message}"),
        None => format!("Error from server: {message}"),
    }
}

/// The first line of `s` (a YAML parser's error is followed by a picture of the line).
fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

/// Text on one line: runs of white space (line breaks included) become one space; at most
/// [`MAX_MESSAGE`] characters.
fn single_line(s: &str) -> String {
    let words: Vec<&str> = s.split_whitespace().collect();
    let line = words.join(" ");
    match line.char_indices().nth(MAX_MESSAGE) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// Why no connection could be made, when `e` is a failure to connect (the request never reached
/// the server): the kind of the operating system's error (`connection refused`, `host
/// unreachable`, `timed out`), else the innermost error's words (a name that does not resolve, a
/// certificate that is not trusted).
pub fn connect_failure(e: &kube::Error) -> Option<String> {
    let chain = || causes(e);
    if !is_connect(e) {
        return None;
    }
    let io = chain().find_map(|c| c.downcast_ref::<std::io::Error>());
    let cause = match io {
        Some(io) if io.raw_os_error().is_some() => io.kind().to_string(),
        Some(io) => io.to_string(),
        None => chain().last().map(ToString::to_string).unwrap_or_default(),
    };
    Some(cause)
}

/// A kube error on one line: an API status as kubectl words it, a failed connection with its
/// cause, anything else as its causes, each once.
pub fn describe(e: &kube::Error) -> String {
    if let kube::Error::Api(s) = e {
        return server_error(&ApiStatus::of(s));
    }
    if let Some(cause) = connect_failure(e) {
        let server = causes(e)
            .find_map(|c| c.downcast_ref::<ConnectFailed>())
            .map_or("the API server", |c| c.server.as_str());
        return format!("cannot connect to {server} ({cause})");
    }
    let mut out = String::new();
    for c in causes(e) {
        push_cause(&mut out, &c.to_string());
    }
    out
}

/// A kube-runtime watcher error on one line, its kube error worded by [`describe`].
pub fn describe_watcher(e: &kube::runtime::watcher::Error) -> String {
    use kube::runtime::watcher::Error as W;
    match e {
        W::InitialListFailed(k) => format!("the LIST failed: {}", describe(k)),
        W::WatchStartFailed(k) => format!("the WATCH failed to start: {}", describe(k)),
        W::WatchFailed(k) => format!("the WATCH stream failed: {}", describe(k)),
        W::WatchError(s) => format!("the WATCH ended: {}", server_error(&ApiStatus::of(s))),
        W::NoResourceVersion => e.to_string(),
    }
}

/// An error and its causes on one line, each cause once: a kube error, a watcher error or an API
/// status is worded by [`describe`] (which covers its own causes), and a cause whose text the line
/// already ends with (a library that prints its source in its own message) is not repeated.
pub fn one_line(e: &(dyn StdError + 'static)) -> String {
    let mut out = String::new();
    let mut cur = Some(e);
    while let Some(c) = cur {
        if let Some(k) = c.downcast_ref::<kube::Error>() {
            push_cause(&mut out, &describe(k));
            break;
        }
        if let Some(w) = c.downcast_ref::<kube::runtime::watcher::Error>() {
            push_cause(&mut out, &describe_watcher(w));
            break;
        }
        if let Some(s) = c.downcast_ref::<kube::core::Status>() {
            push_cause(&mut out, &server_error(&ApiStatus::of(s)));
            break;
        }
        push_cause(&mut out, &c.to_string());
        cur = c.source();
    }
    out
}

/// `e` and its causes, outermost first.
fn causes<'a>(
    e: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(e), |&c| c.source())
}

/// Appends `text` after `: `, unless it is empty or the line already ends with it.
fn push_cause(out: &mut String, text: &str) {
    if text.is_empty() || out.ends_with(text) {
        return;
    }
    if !out.is_empty() {
        out.push_str(": ");
    }
    out.push_str(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, reason)
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn server_errors_read_like_kubectl() {
        let server = Server::new(http::Uri::from_static("https://10.0.0.1:6443"));
        let e = RequestError::new(
            &server,
            http::Method::GET,
            "/apis/net.unbounded-cloud.io/v1alpha1/sites?limit=500",
            status(
                403,
                "Forbidden",
                "sites is forbidden: User \"x\" cannot list",
            ),
        );
        assert_eq!(
            e.to_string(),
            "Error from server (Forbidden): sites is forbidden: User \"x\" cannot list (GET https://10.0.0.1:6443/apis/net.unbounded-cloud.io/v1alpha1/sites?limit=500)"
        );
        assert_eq!(e.code(), Some(403));
        assert!(e.source().is_none());
    }

    #[test]
    fn a_body_that_is_no_status_is_named_by_the_http_status() {
        let s = ApiStatus {
            code: 502,
            reason: "Failed to parse error data".into(),
            message: "<html>\n<body>bad\ngateway</body></html>".into(),
        };
        assert_eq!(
            server_error(&s),
            "Error from server (BadGateway): <html> <body>bad gateway</body></html>"
        );
        let empty = ApiStatus {
            code: 500,
            reason: String::new(),
            message: String::new(),
        };
        assert_eq!(
            server_error(&empty),
            "Error from server (InternalServerError): the server answered 500 Internal Server Error"
        );
    }

    #[test]
    fn server_urls_keep_a_path_prefix() {
        let s = Server::new(http::Uri::from_static("https://h:1/k8s/clusters/c-1/"));
        assert_eq!(s.to_string(), "https://h:1/k8s/clusters/c-1");
        assert_eq!(
            s.url_of("/api/v1/nodes?&limit=500"),
            "https://h:1/k8s/clusters/c-1/api/v1/nodes?limit=500"
        );
        assert_eq!(
            s.url_of("/api/v1/nodes?"),
            "https://h:1/k8s/clusters/c-1/api/v1/nodes"
        );
        let plain = Server::new(http::Uri::from_static("http://127.0.0.1:8080"));
        assert_eq!(plain.to_string(), "http://127.0.0.1:8080");
    }

    #[test]
    fn chains_word_kube_errors_once_without_debug() {
        #[derive(Debug, thiserror::Error)]
        #[error("cannot get the own Node")]
        struct Outer(#[source] kube::Error);
        let e = Outer(status(404, "NotFound", "nodes \"n1\" not found"));
        assert_eq!(
            one_line(&e),
            "cannot get the own Node: Error from server (NotFound): nodes \"n1\" not found"
        );
        let w = kube::runtime::watcher::Error::InitialListFailed(status(403, "Forbidden", "no"));
        assert_eq!(
            one_line(&w),
            "the LIST failed: Error from server (Forbidden): no"
        );
    }
}
