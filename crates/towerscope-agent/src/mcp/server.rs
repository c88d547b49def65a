//! [`McpServer`]: how to reach an MCP server ([`McpTransport`]), how long to wait for it, and
//! which of its tools join a toolkit.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// How long a request to an MCP server may wait without a word from the server about it (its
/// answer, or a progress notification, after which the wait starts again), unless
/// [`McpServer::timeout()`] says otherwise: one minute, the default request timeout of the MCP
/// TypeScript SDK. It bounds each listing, read, prompt and tool call, so a server that stops
/// answering fails the request instead of hanging the agent, while a tool that keeps reporting
/// progress runs as long as it needs.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long connecting to an MCP server (starting a stdio server's process, initialising the
/// session) may take unless [`McpServer::connect_timeout()`] or [`McpServer::timeout()`] says
/// otherwise: five minutes, since the first run of an `npx` or `uvx` server downloads and
/// installs its package before it answers.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// The longest message an MCP server may send unless [`McpServer::max_message_bytes()`] says
/// otherwise: 32 MiB, room for a tool result holding a few large images in base64. A longer one
/// fails the requests it answers (naming the limit) rather than filling memory.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 32 << 20;

/// How to reach an MCP server, and how its tools join a toolkit.
///
/// # Timeouts
///
/// Three limits keep a server from hanging the agent, each `None` for no limit:
///
/// | limit | bounds | default |
/// |---|---|---|
/// | [`timeout`](Self::timeout()) | the server's silence about a request: its answer or a progress notification must come within it | [`DEFAULT_TIMEOUT`], a minute |
/// | [`connect_timeout`](Self::connect_timeout()) | starting a stdio server and initialising the session | [`DEFAULT_CONNECT_TIMEOUT`], five minutes, or the `timeout` when one was set |
/// | [`total_timeout`](Self::total_timeout()) | a request's whole time, however often the server reports progress | none |
///
/// A tool call that reports progress every few seconds thus runs for as long as it works, and
/// fails a minute after the server stops saying anything about it. Setting a timeout
/// ([`timeout()`](Self::timeout()), [`no_timeout()`](Self::no_timeout)) sets connecting's too,
/// since it says how long you are prepared to wait for this server; a
/// [`connect_timeout()`](Self::connect_timeout()), before or after, gives connecting its own.
///
/// ```
/// use std::time::Duration;
/// use towerscope_agent::mcp::{DEFAULT_CONNECT_TIMEOUT, McpServer};
///
/// let server = McpServer::stdio("files", "npx", ["-y", "@modelcontextprotocol/server-filesystem", "."]);
/// assert_eq!(server.connect_timeout, Some(DEFAULT_CONNECT_TIMEOUT));
/// let server = server.timeout(Duration::from_secs(10)).total_timeout(Duration::from_secs(3600));
/// assert_eq!(server.connect_timeout, Some(Duration::from_secs(10)));
/// let server = server.connect_timeout(Duration::from_secs(120)).no_timeout();
/// assert_eq!((server.timeout, server.connect_timeout), (None, Some(Duration::from_secs(120))));
/// ```
#[derive(Debug, Clone)]
pub struct McpServer {
    /// The server's name: the tools' prefix and the name of their group.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// The group's description, for `reset_tools` (default: the server's instructions, or
    /// "Tools of the MCP server '{name}'.").
    pub description: Option<String>,
    /// Whether the server's group is active from the start (default `false`).
    pub active: bool,
    /// How long a request (a page of a listing, a read, a prompt, a tool call) may wait
    /// without a word from the server about it: its answer, or a progress notification, after
    /// which the wait starts again (default [`DEFAULT_TIMEOUT`]; `None`: no limit, so a server
    /// that never answers hangs whatever waits for it). See [Timeouts](Self#timeouts).
    pub timeout: Option<Duration>,
    /// How long starting a stdio server and initialising the session may take (default
    /// [`DEFAULT_CONNECT_TIMEOUT`], or the [`timeout`](Self::timeout()) when one was set;
    /// `None`: no limit).
    pub connect_timeout: Option<Duration>,
    /// How long a request may take in all, however often the server reports progress (default
    /// `None`: a tool that keeps reporting progress runs as long as it works).
    pub total_timeout: Option<Duration>,
    /// Whether [`connect_timeout()`](Self::connect_timeout()) set connecting's limit, which a
    /// timeout set before or after then leaves alone.
    connect_timeout_set: bool,
    /// Only these tools (names on the server) are added, when set (reference `enable_tools`).
    pub enable_tools: Option<Vec<String>>,
    /// These tools (names on the server) are not added (reference `disable_tools`).
    pub disable_tools: Vec<String>,
    /// The longest message a server may send, in bytes (default
    /// [`DEFAULT_MAX_MESSAGE_BYTES`]), read no further than that:
    /// - from a stdio server, one JSON-RPC line: a longer one closes the connection, and the
    ///   requests waiting on it fail with an error that names this limit;
    /// - from an HTTP server, a JSON answer (its request fails with that error), or one event
    ///   of an event stream (the stream ends, and the request it answers gets that error);
    ///   the connection stays open.
    pub max_message_bytes: usize,
    /// Settings given that the transport has no use for (`header` on a stdio server, `env` on
    /// an HTTP one): connecting fails and names them, rather than ignoring them.
    misplaced: Vec<&'static str>,
}

/// How to reach an MCP server.
///
/// Its `Debug` output names environment variables and headers but never shows their values,
/// nor the bearer token, nor the URL past its host: they are often credentials.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking JSON-RPC over its stdin and stdout.
    #[non_exhaustive]
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its environment variables, besides the few it inherits (see
        /// [`McpServer::inherit_env`]).
        env: BTreeMap<String, String>,
        /// Whether it inherits the agent's whole environment ([`McpServer::inherit_env`]);
        /// otherwise only [`INHERITED_ENV`].
        inherit_env: bool,
    },
    /// A streamable-HTTP endpoint, `http://` or `https://` (`https://mcp.example.com/mcp`).
    Http {
        /// The endpoint's URL.
        url: String,
        /// Headers sent with every request, in order (names are checked when connecting).
        headers: Vec<(String, String)>,
        /// The token sent as `Authorization: Bearer {token}`.
        bearer: Option<String>,
        /// Certificates (PEM) trusted besides the system's roots: a private CA, or a
        /// self-signed server's own certificate.
        root_certificates: Vec<String>,
    },
}

/// The variables of the agent's environment a stdio server inherits unless it is given all
/// of them ([`McpServer::inherit_env`]): those the MCP SDKs pass, enough to find programs and a
/// home directory.
#[cfg(not(windows))]
pub const INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// The variables of the agent's environment a stdio server inherits unless it is given all
/// of them ([`McpServer::inherit_env`]): those the MCP SDKs pass, enough to find programs and a
/// home directory.
#[cfg(windows)]
pub const INHERITED_ENV: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
];

impl fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio {
                command,
                args,
                env,
                inherit_env,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("inherit_env", inherit_env)
                .finish(),
            Self::Http {
                url,
                headers,
                bearer,
                root_certificates,
            } => f
                .debug_struct("Http")
                .field("url", &url_without_secrets(url))
                .field("headers", &headers.iter().map(|(k, _)| k).collect::<Vec<_>>())
                .field("bearer", &bearer.as_ref().map(|_| "<redacted>"))
                .field("root_certificates", &root_certificates.len())
                .finish(),
        }
    }
}

impl McpServer {
    /// A server started as a child process.
    pub fn stdio(
        name: impl Into<String>,
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self::new(
            name,
            McpTransport::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                inherit_env: false,
            },
        )
    }

    /// A server reached over streamable HTTP, `http://` or `https://` (through rustls with the
    /// `ring` provider, the providers' TLS stack; the system's root certificates are trusted).
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name,
            McpTransport::Http {
                url: url.into(),
                headers: Vec::new(),
                bearer: None,
                root_certificates: Vec::new(),
            },
        )
    }

    fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        Self {
            name: name.into(),
            transport,
            description: None,
            active: false,
            timeout: Some(DEFAULT_TIMEOUT),
            connect_timeout: Some(DEFAULT_CONNECT_TIMEOUT),
            total_timeout: None,
            connect_timeout_set: false,
            misplaced: Vec::new(),
            enable_tools: None,
            disable_tools: Vec::new(),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }

    /// Records a setting the transport has no use for.
    fn misplaced(mut self, setting: &'static str) -> Self {
        if !self.misplaced.contains(&setting) {
            self.misplaced.push(setting);
        }
        self
    }

    /// A validation error naming the settings the transport has no use for, if any.
    pub(crate) fn check_settings(&self) -> Result<(), towerscope_core::AgentError> {
        if self.misplaced.is_empty() {
            return Ok(());
        }
        let kind = match self.transport {
            McpTransport::Stdio { .. } => "a stdio server",
            McpTransport::Http { .. } => "an HTTP server",
        };
        Err(towerscope_core::AgentError::validation(format!(
            "MCP server '{}' is {kind}, which has no use for {}",
            self.name,
            self.misplaced.join(", ")
        )))
    }

    /// Gives a stdio server the agent's whole environment. By default it gets only
    /// [`INHERITED_ENV`] and what [`env`](Self::env) adds, as the MCP SDKs do: the agent's
    /// environment holds its provider keys, and a server is often a third party's package.
    #[must_use]
    pub fn inherit_env(mut self) -> Self {
        match &mut self.transport {
            McpTransport::Stdio { inherit_env, .. } => {
                *inherit_env = true;
                self
            }
            McpTransport::Http { .. } => self.misplaced("inherit_env()"),
        }
    }

    /// Adds an environment variable of a stdio server (on an HTTP server, connecting fails
    /// with a validation error that says so).
    #[must_use]
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        match &mut self.transport {
            McpTransport::Stdio { env, .. } => {
                env.insert(key.into(), value.into());
                self
            }
            McpTransport::Http { .. } => self.misplaced("env()"),
        }
    }

    /// Adds a header to every request of an HTTP server (an API key, a tenant). A name or value
    /// HTTP does not allow, or a header on a stdio server, fails the connection with a
    /// validation error.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        match &mut self.transport {
            McpTransport::Http { headers, .. } => {
                headers.push((name.into(), value.into()));
                self
            }
            McpTransport::Stdio { .. } => self.misplaced("header()"),
        }
    }

    /// Sends `Authorization: Bearer {token}` with every request of an HTTP server (on a stdio
    /// server, connecting fails with a validation error).
    #[must_use]
    pub fn bearer(mut self, token: impl Into<String>) -> Self {
        match &mut self.transport {
            McpTransport::Http { bearer, .. } => {
                *bearer = Some(token.into());
                self
            }
            McpTransport::Stdio { .. } => self.misplaced("bearer()"),
        }
    }

    /// Trusts a certificate (PEM) besides the system's roots for an `https://` server: a
    /// private CA, or a self-signed server's own certificate. PEM that does not parse, or a
    /// certificate for a stdio server, fails the connection with a validation error.
    #[must_use]
    pub fn root_certificate(mut self, pem: impl Into<String>) -> Self {
        match &mut self.transport {
            McpTransport::Http { root_certificates, .. } => {
                root_certificates.push(pem.into());
                self
            }
            McpTransport::Stdio { .. } => self.misplaced("root_certificate()"),
        }
    }

    /// Sets the group's description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Adds only these of the server's tools (their names on the server), as the reference's
    /// `enable_tools`. A name also given to [`disable_tools`](Self::disable_tools) makes
    /// adding the server fail with a validation error.
    #[must_use]
    pub fn enable_tools(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.enable_tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Leaves these of the server's tools out (their names on the server), as the reference's
    /// `disable_tools`.
    #[must_use]
    pub fn disable_tools(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.disable_tools = names.into_iter().map(Into::into).collect();
        self
    }

    /// Whether the tool named `name` on the server is to be added.
    pub(crate) fn wants_tool(&self, name: &str) -> bool {
        self.enable_tools.as_ref().is_none_or(|on| on.iter().any(|t| t == name))
            && !self.disable_tools.iter().any(|t| t == name)
    }

    /// A validation error when a tool is both enabled and disabled, as in the reference.
    pub(crate) fn check_tool_filters(&self) -> Result<(), towerscope_core::AgentError> {
        let both: Vec<&str> = self
            .enable_tools
            .iter()
            .flatten()
            .filter(|t| self.disable_tools.contains(t))
            .map(String::as_str)
            .collect();
        if both.is_empty() {
            return Ok(());
        }
        Err(towerscope_core::AgentError::validation(format!(
            "MCP server '{}': the tools {both:?} are both enabled and disabled; name each in one list",
            self.name
        )))
    }

    /// Sets whether the group is active from the start.
    #[must_use]
    pub fn active(mut self, active: bool) -> Self {
        self.active = active;
        self
    }

    /// Sets how long a request may wait without a word from the server about it (default
    /// [`DEFAULT_TIMEOUT`]; a progress notification starts the wait again), and how long
    /// connecting may take, unless [`connect_timeout()`](Self::connect_timeout()) says.
    #[must_use]
    pub fn timeout(self, timeout: Duration) -> Self {
        self.timeouts(Some(timeout))
    }

    /// Lets requests wait for the server as long as it takes (up to a
    /// [`total_timeout`](Self::total_timeout()), if set), and connecting too, unless
    /// [`connect_timeout()`](Self::connect_timeout()) says: for a server trusted to answer. A
    /// tool that runs long but reports progress needs no such thing: progress starts the
    /// [`timeout`](Self::timeout()) again.
    #[must_use]
    pub fn no_timeout(self) -> Self {
        self.timeouts(None)
    }

    fn timeouts(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        if !self.connect_timeout_set {
            self.connect_timeout = timeout;
        }
        self
    }

    /// Sets how long starting a stdio server and initialising the session may take (default
    /// [`DEFAULT_CONNECT_TIMEOUT`]), whatever [`timeout()`](Self::timeout()) says.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self.connect_timeout_set = true;
        self
    }

    /// Sets the longest message the server may send (default [`DEFAULT_MAX_MESSAGE_BYTES`]; see
    /// [`max_message_bytes`](Self#structfield.max_message_bytes) for what is bounded).
    #[must_use]
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }

    /// Caps how long a request may take in all, however often the server reports progress
    /// (default: no cap).
    #[must_use]
    pub fn total_timeout(mut self, timeout: Duration) -> Self {
        self.total_timeout = Some(timeout);
        self
    }
}

/// A URL as `Debug` shows it: its scheme and host only (a key may be in the user information,
/// the path, as some hosted servers put it, or the query).
fn url_without_secrets(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let authority = &rest[..host_end];
            let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}/…")
        }
        None => "…".to_owned(),
    }
}

#[cfg(test)]
mod url_tests {
    #[test]
    fn debug_shows_only_scheme_and_host() {
        assert_eq!(
            super::url_without_secrets("https://u:p@h.example:8443/mcp?key=SECRET#x"),
            "https://h.example:8443/…"
        );
        assert_eq!(super::url_without_secrets("https://h/mcp/sk-SECRET/sse"), "https://h/…");
        assert_eq!(super::url_without_secrets("not a url SECRET"), "…");
    }
}
