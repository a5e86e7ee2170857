//! Processes for the end-to-end tests: the real service (the root workspace's `server` binary)
//! and the gateway binary, spoken to over stdio or streamable HTTP.

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
    sync::OnceLock,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn repo_file(relative: &str) -> PathBuf {
    repo_root().join(relative)
}

/// The `server` binary: `SERVER_BIN`, or built once from the root workspace.
fn server_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Ok(bin) = std::env::var("SERVER_BIN") {
            return PathBuf::from(bin);
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let manifest = repo_file("Cargo.toml");
        let status = Command::new(cargo)
            .args([
                "build",
                "--quiet",
                "-p",
                "server",
                "--bin",
                "server",
                "--manifest-path",
            ])
            .arg(&manifest)
            // The root workspace's own target dir: a shared one would be locked by this build.
            .env_remove("CARGO_TARGET_DIR")
            .status()
            .unwrap();
        assert!(status.success(), "building the server failed");
        repo_file("target/debug/server")
    })
    .clone()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The real service on a fresh SQLite database and a free port.
pub struct ServerProcess {
    pub base_url: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl ServerProcess {
    pub async fn start() -> ServerProcess {
        ServerProcess::start_with(&[]).await
    }

    /// With extra environment, e.g. `API_AUTH=tokens`.
    pub async fn start_with(env: &[(&str, &str)]) -> ServerProcess {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let child = Command::new(server_bin())
            .current_dir(dir.path())
            .env(
                "DATABASE_URL",
                format!("sqlite://{}/test.db", dir.path().display()),
            )
            .env("BIND", format!("127.0.0.1:{port}"))
            .env("RUST_LOG", "warn")
            .env_remove("API_AUTH")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base_url = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(res) = client.get(format!("{base_url}/health")).send().await
                && res.status().is_success()
            {
                break;
            }
            assert!(Instant::now() < deadline, "the server did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        ServerProcess {
            base_url,
            child,
            _dir: dir,
        }
    }
}

impl ServerProcess {
    /// `GET path` of the service, as JSON.
    pub async fn get_json(&self, path: &str) -> Value {
        reqwest::get(format!("{}{path}", self.base_url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn gateway_command(catalog: &Path, base_url: &str, token: Option<&str>) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tool-gateway"));
    command
        .arg("--catalog")
        .arg(catalog)
        .args(["--base-url", base_url])
        .env_remove("TOOL_CATALOG")
        .env_remove("SERVICE_BASE_URL")
        .env_remove("SERVICE_MCP_BEARER_TOKEN")
        .env("RUST_LOG", "error");
    if let Some(token) = token {
        command.env("SERVICE_MCP_BEARER_TOKEN", token);
    }
    command
}

/// The gateway over stdio: newline-delimited JSON-RPC.
pub struct StdioGateway {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl StdioGateway {
    pub fn start(catalog: &Path, base_url: &str, token: Option<&str>) -> StdioGateway {
        let mut child = gateway_command(catalog, base_url, token)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        StdioGateway {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    pub fn send_line(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and returns the whole JSON-RPC response (skipping notifications).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.request_with_id(json!(id), method, params)
    }

    /// [`StdioGateway::request`] under a JSON-RPC id of the caller's choosing (a retry).
    pub fn request_with_id(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send_line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "the gateway closed stdout");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// `initialize` + `notifications/initialized`; returns the initialize result.
    pub fn initialize(&mut self) -> Value {
        let response = self.request("initialize", init_params());
        self.send_line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        response["result"].clone()
    }
}

impl Drop for StdioGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn init_params() -> Value {
    json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "tool-gateway-tests", "version": "0"}
    })
}

/// The gateway over streamable HTTP (`--http 127.0.0.1:0`).
pub struct HttpGateway {
    pub url: String,
    child: Child,
    client: reqwest::Client,
    pub session: Option<String>,
    next_id: u64,
    /// The MCP client's own bearer token (checked with `--client-auth tokens`, never
    /// forwarded to the API).
    pub bearer: String,
}

impl HttpGateway {
    pub fn start(catalog: &Path, base_url: &str, token: Option<&str>) -> HttpGateway {
        HttpGateway::start_with(catalog, base_url, token, &[])
    }

    /// [`HttpGateway::start`] with more command-line arguments (`--client-auth tokens`).
    pub fn start_with(
        catalog: &Path,
        base_url: &str,
        token: Option<&str>,
        args: &[&str],
    ) -> HttpGateway {
        let mut child = gateway_command(catalog, base_url, token)
            .args(["--http", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().rsplit(' ').next().unwrap().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        HttpGateway {
            url,
            child,
            client: reqwest::Client::new(),
            session: None,
            next_id: 1,
            bearer: "client-credential-not-for-the-api".to_owned(),
        }
    }

    /// POSTs one JSON-RPC message (with an MCP client's own `Authorization` header, which must
    /// never reach the API) and returns the HTTP status and the JSON-RPC answer, if any.
    pub async fn post(&mut self, message: &Value) -> (u16, Option<Value>) {
        let mut request = self
            .client
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("Authorization", format!("Bearer {}", self.bearer))
            .json(message);
        if let Some(session) = &self.session {
            request = request
                .header("Mcp-Session-Id", session)
                .header("MCP-Protocol-Version", "2025-11-25");
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = Some(session.to_str().unwrap().to_owned());
        }
        let is_sse = response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap_or("").starts_with("text/event-stream"));
        let text = response.text().await.unwrap();
        if text.trim().is_empty() {
            return (status, None);
        }
        if !is_sse {
            return (status, Some(serde_json::from_str(&text).unwrap()));
        }
        let id = &message["id"];
        let found = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|value| &value["id"] == id);
        (status, found)
    }

    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let (status, body) = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        body.unwrap_or_else(|| panic!("no JSON-RPC answer to {method} (HTTP {status})"))
    }

    pub async fn initialize(&mut self) -> Value {
        let response = self.request("initialize", init_params()).await;
        let (status, _) = self
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(status, 202);
        response["result"].clone()
    }
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
