//! One connection from the worker's relay: each message the worker sends is judged here
//! ([`client_message`]) before the run's server sees it, and refused, answered or passed on
//! under the gateway's own id.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncWriteExt as _, BufReader};
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use super::compare::{Answer, Forwarded, GatewayDenial};
use super::own;
use super::policy;
use super::server::{id_key, read_line, send, Init, Pending, RequestKey, Route, Routes, Server};
use super::start::Ctx;
use crate::browser::RefTracker;

/// One connection to the run's server, both directions judged.
pub(super) async fn serve(conn: UnixStream, ctx: &Arc<Ctx>) -> anyhow::Result<()> {
    let srv = ctx.server()?;
    let (client_r, mut client_w) = conn.into_split();
    let (to_client, mut to_client_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    // A server already gone: the socket closes at once, and the relay with it.
    let Some(conn) = srv.connect(to_client) else {
        return Ok(());
    };
    let mut client_writer = tokio::spawn(async move {
        while let Some(b) = to_client_rx.recv().await {
            if client_w.write_all(&b).await.is_err() {
                break;
            }
        }
        let _ = client_w.shutdown().await;
    });
    let from_client = async {
        let mut r = BufReader::new(client_r);
        while let Some(line) = read_line(&mut r).await {
            client_message(ctx, &srv, conn, &line);
        }
    };
    // The client closing ends the connection (the relay exits when its socket closes); the
    // server ending closes every connection's writer.
    let writer_done = tokio::select! {
        () = from_client => false,
        _ = &mut client_writer => true,
    };
    srv.disconnect(conn);
    if !writer_done {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), client_writer).await;
    }
    Ok(())
}

/// Records a message the gateway refused (`gateway_unjudgeable`, with what it was).
fn record_refusal(ctx: &Ctx, what: &str, method: Option<&str>, tool: Option<&str>) {
    let mut rec = ctx.record.lock().unwrap_or_else(|e| e.into_inner());
    let seq = rec.next_seq();
    rec.line(
        json!({"event": "message", "seq": seq, "server": ctx.policy.server, "verdict": "denied",
        "reason": leopold_guard::Reason::GatewayUnjudgeable.id(), "detail": what,
        "method": method.and_then(|m| leopold_guard::safe_text(m, 64)),
        "tool": tool.and_then(|t| leopold_guard::safe_text(t, 128))}),
    );
}

/// A refused message: recorded, and answered when it has an id to answer.
fn refuse(ctx: &Ctx, srv: &Server, conn: u64, msg: &Value, id: Option<&Value>, what: &str) {
    let method = msg.get("method").and_then(Value::as_str);
    let tool = (method == Some("tools/call"))
        .then(|| msg.pointer("/params/name").and_then(Value::as_str))
        .flatten();
    record_refusal(ctx, what, method, tool);
    if let Some(id) = id {
        srv.to_conn(
            conn,
            &policy::rpc_error(
                id,
                -32600,
                &format!("Leopold's gateway refused the message: {what}"),
            ),
        );
    }
}

/// Passes a request on to the server under an id of the gateway's own.
fn pass_on(ctx: &Ctx, srv: &Server, conn: u64, id: &Value, what: Pending, mut msg: Value) {
    let call = matches!(what, Pending::ToolsCall { .. });
    let gid = srv.routes().route(Route {
        conn,
        id: id.clone(),
        what,
    });
    msg["id"] = json!(gid);
    if call {
        super::evidence::send_call(ctx, srv, msg);
    } else {
        send(&srv.to_server, &msg);
    }
}

/// Whether the connection has a request with this id in flight.
fn in_flight(r: &Routes, key: &RequestKey) -> bool {
    r.pending
        .values()
        .any(|p| p.conn == key.0 && id_key(&p.id) == key.1)
        || matches!(&r.init, Init::Waiting(w) if w.iter().any(|(c, i)| *c == key.0 && id_key(i) == key.1))
}

/// One message from the worker, on connection `conn`.
fn client_message(ctx: &Ctx, srv: &Server, conn: u64, line: &[u8]) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let policy = &ctx.policy;
    let msg: Value = match serde_json::from_slice(line) {
        Ok(v @ Value::Object(_)) => v,
        // Not one JSON-RPC message (a batch, a scalar, not JSON): refused, never forwarded.
        _ => {
            refuse(
                ctx,
                srv,
                conn,
                &Value::Null,
                Some(&Value::Null),
                "not one JSON-RPC message",
            );
            return;
        }
    };
    let id = msg.get("id").cloned();
    let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
    let Some(m) = method.as_deref() else {
        // A response, or neither: the gateway asks the worker nothing (it answers the
        // server's requests itself), so there is nothing it could answer.
        refuse(
            ctx,
            srv,
            conn,
            &msg,
            None,
            "a message with no method (the gateway asks the worker nothing)",
        );
        return;
    };
    if !policy::client_method_passes(m) {
        record_refusal(ctx, "a method the gateway does not pass on", Some(m), None);
        // A request gets its answer; a notification cannot.
        if let Some(id) = &id {
            srv.to_conn(
                conn,
                &policy::rpc_error(
                    id,
                    -32601,
                    &format!("Leopold's gateway does not pass on `{m}`"),
                ),
            );
        }
        return;
    }
    let Some(id) = id else {
        client_notification(ctx, srv, conn, m, msg);
        return;
    };
    if !(id.is_string() || id.is_i64() || id.is_u64()) {
        refuse(
            ctx,
            srv,
            conn,
            &msg,
            Some(&Value::Null),
            "a request id that is neither a string nor an integer",
        );
        return;
    }
    if in_flight(&srv.routes(), &(conn, id_key(&id))) {
        // Its answer would be taken for the other's: refused, the first one stands.
        refuse(
            ctx,
            srv,
            conn,
            &msg,
            Some(&id),
            "a request id already in flight on this connection",
        );
        return;
    }
    match m {
        "tools/call" => {
            // Leopold's own tools are answered here; everything else is the browser's to judge.
            let own_tool = msg
                .pointer("/params/name")
                .and_then(Value::as_str)
                .filter(|t| ctx.own_tools && own::is_own(t))
                .map(str::to_owned);
            let mut own_call = None;
            let verdict = match own_tool {
                Some(tool) => {
                    let args = msg
                        .pointer("/params/arguments")
                        .cloned()
                        .unwrap_or_else(|| json!({}));
                    match own::judge(&tool, &args) {
                        Ok(c) => {
                            own_call = Some(c);
                            Ok((tool, args))
                        }
                        Err(d) => Err((Some(tool), d)),
                    }
                }
                None => {
                    let refs_guard = ctx
                        .refs
                        .as_ref()
                        .map(|r| r.lock().unwrap_or_else(|e| e.into_inner()));
                    policy.judge_call(
                        msg.get("params"),
                        refs_guard.as_deref().map(RefTracker::map),
                    )
                }
            };
            match verdict {
                Ok((tool, arguments)) => {
                    let full = policy.full_name(&tool);
                    let call = leopold_guard::reduced_call(&full, &arguments);
                    let seq = {
                        let mut rec = ctx.record.lock().unwrap_or_else(|e| e.into_inner());
                        let seq = rec.next_seq();
                        rec.line(json!({"event": "call", "seq": seq, "server": policy.server, "tool": tool,
                            "verdict": "allowed", "call": call}));
                        // A call the record cannot hold is never made (the run is stopping).
                        (!rec.full()).then_some(seq)
                    };
                    let Some(seq) = seq else {
                        srv.to_conn(
                            conn,
                            &policy::tool_error(&id, "Leopold's record of this run is full (--max-records): the call was not made"),
                        );
                        return;
                    };
                    ctx.shared
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .forwarded
                        .push(Forwarded {
                            seq,
                            tool: full.clone(),
                            call,
                            answer: None,
                        });
                    match own_call {
                        Some(c) => answer_own(ctx, srv, conn, &id, &tool, seq, c),
                        None => pass_on(ctx, srv, conn, &id, Pending::ToolsCall { seq, tool }, msg),
                    }
                }
                Err((tool, denial)) => {
                    let full = tool.as_deref().map(|t| policy.full_name(t));
                    let shown = full
                        .as_deref()
                        .and_then(|t| leopold_guard::safe_text(t, 128));
                    let text =
                        leopold_guard::message(&denial, Some(&policy.flow.name), shown.as_deref());
                    let args = msg
                        .get("params")
                        .and_then(|p| p.get("arguments"))
                        .cloned()
                        .unwrap_or(Value::Null);
                    let own_denied = tool.as_deref().is_some_and(own::is_own);
                    let seq = {
                        let mut rec = ctx.record.lock().unwrap_or_else(|e| e.into_inner());
                        let seq = rec.next_seq();
                        let tool = tool
                            .as_deref()
                            .and_then(|t| leopold_guard::safe_text(t, 128));
                        rec.line(json!({"event": "call", "seq": seq, "server": policy.server, "tool": tool,
                            "verdict": "denied", "reason": denial.reason.id(),
                            "call": leopold_guard::reduced_call(full.as_deref().unwrap_or(""), &args)}));
                        seq
                    };
                    if let Some(full) = full {
                        // Before the answer: the observer must know by the time the harness
                        // prints the error result.
                        let mut sh = ctx.shared.lock().unwrap_or_else(|e| e.into_inner());
                        *sh.denied.entry(full.clone()).or_default() += 1;
                        sh.denials.push_back(GatewayDenial {
                            tool: full,
                            reason: denial.reason.id().to_owned(),
                        });
                    }
                    // The page the persona was on when it hit the wall.
                    if !own_denied {
                        super::evidence::after(ctx, srv, seq, None, true);
                    }
                    srv.to_conn(conn, &policy::tool_error(&id, &text));
                }
            }
        }
        "initialize" => {
            let mut msg = msg;
            // The server is initialized once, by the first connection; every later one is
            // answered with that answer (the gateway's capabilities are the same for all).
            let mut r = srv.routes();
            match &mut r.init {
                Init::Done(answer) => {
                    let mut a = answer.clone();
                    a["id"] = id;
                    drop(r);
                    srv.to_conn(conn, &a);
                }
                Init::Waiting(w) => w.push((conn, id)),
                Init::NotSent => {
                    r.init = Init::Waiting(Vec::new());
                    drop(r);
                    policy::rewrite_initialize(&mut msg);
                    pass_on(ctx, srv, conn, &id, Pending::Initialize, msg);
                }
            }
        }
        "tools/list" => pass_on(ctx, srv, conn, &id, Pending::ToolsList, msg),
        "ping" => pass_on(ctx, srv, conn, &id, Pending::Other, msg),
        // A notification's method sent with an id: not a request the gateway passes on.
        _ => {
            record_refusal(ctx, "a method the gateway does not pass on", Some(m), None);
            srv.to_conn(
                conn,
                &policy::rpc_error(
                    &id,
                    -32601,
                    &format!("Leopold's gateway does not pass on `{m}`"),
                ),
            );
        }
    }
}

/// Answers a call of one of Leopold's own tools ([`own`]): recorded, noted for the verdict and
/// as answered before the worker sees the answer, as a server's answer would be.
fn answer_own(ctx: &Ctx, srv: &Server, conn: u64, id: &Value, tool: &str, seq: u64, c: own::Call) {
    let (mut line, answer) = {
        let mut sh = ctx.shared.lock().unwrap_or_else(|e| e.into_inner());
        let taken = own::take(&mut sh.verdict, c, seq);
        sh.answered(
            seq,
            Answer {
                is_error: taken.1.is_err(),
                page_host: None,
            },
        );
        taken
    };
    line["server"] = json!(ctx.policy.server);
    {
        let mut rec = ctx.record.lock().unwrap_or_else(|e| e.into_inner());
        rec.line(line);
        rec.line(
            json!({"event": "result", "seq": seq, "server": ctx.policy.server, "tool": tool,
            "is_error": answer.is_err()}),
        );
    }
    let reply = match answer {
        Ok(text) => json!({"jsonrpc": "2.0", "id": id,
            "result": {"content": [{"type": "text", "text": text}], "isError": false}}),
        Err(text) => policy::tool_error(id, &text),
    };
    srv.to_conn(conn, &reply);
}

/// A notification from the worker: the few the server needs go on; anything else, a
/// `tools/call` without an id first, is refused and recorded (it cannot be answered).
fn client_notification(ctx: &Ctx, srv: &Server, conn: u64, m: &str, mut msg: Value) {
    match m {
        "notifications/initialized" => {
            let mut r = srv.routes();
            if matches!(r.init, Init::Done(_)) && !r.initialized {
                r.initialized = true;
                drop(r);
                send(&srv.to_server, &msg);
            }
        }
        "notifications/cancelled" => {
            // Names the worker's id: the server knows the request by the gateway's.
            let key = msg
                .pointer("/params/requestId")
                .map(|i| (conn, id_key(i)));
            let gid = key.and_then(|key| {
                srv.routes()
                    .pending
                    .iter()
                    .find(|(_, p)| p.conn == key.0 && id_key(&p.id) == key.1)
                    .map(|(g, _)| *g)
            });
            match gid {
                Some(g) => {
                    msg["params"]["requestId"] = json!(g);
                    send(&srv.to_server, &msg);
                }
                None => refuse(ctx, srv, conn, &msg, None, "a cancellation of no request in flight on this connection"),
            }
        }
        "notifications/progress" => send(&srv.to_server, &msg),
        "tools/call" => refuse(
            ctx,
            srv,
            conn,
            &msg,
            None,
            "a tools/call without an id (a notification): the gateway passes on requests it can answer",
        ),
        _ => refuse(ctx, srv, conn, &msg, None, "a notification the gateway does not pass on"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::super::compare::{Answer, Shared};
    use super::super::policy::Policy;
    use super::super::record::Record;
    use super::super::server::server_message;
    use super::super::Upstream;
    use super::*;

    struct Wire {
        ctx: Ctx,
        _dir: tempfile::TempDir,
        srv: Server,
        conn: u64,
        client_rx: mpsc::UnboundedReceiver<Vec<u8>>,
        server_rx: mpsc::UnboundedReceiver<Vec<u8>>,
    }

    impl Wire {
        fn new() -> Wire {
            let dir = tempfile::tempdir().unwrap();
            let out = std::fs::canonicalize(dir.path()).unwrap();
            let flow = crate::test_support::checkout_flow("");
            let file =
                std::fs::File::create(out.join(crate::run_dir::RunDir::GATEWAY_RECORD)).unwrap();
            let ctx = Ctx {
                policy: Policy {
                    flow,
                    server: "browser".into(),
                    output_dir: out.clone(),
                    provisioned: true,
                },
                upstream: Upstream {
                    name: "browser".into(),
                    command: "x".into(),
                    args: Vec::new(),
                    env: Vec::new(),
                    provisioned: true,
                },
                shared: Arc::new(Mutex::new(Shared::default())),
                record: Arc::new(Mutex::new(Record::new(file, None))),
                refs: None,
                cwd: out.clone(),
                run_id: "r1".into(),
                stderr_log: out.join("log"),
                server: Mutex::new(None),
                web: None,
                own_tools: true,
                evidence: None,
            };
            let (to_server, server_rx) = mpsc::unbounded_channel();
            let srv = Server::new(to_server);
            let (to_client, client_rx) = mpsc::unbounded_channel();
            let conn = srv.connect(to_client).unwrap();
            Wire {
                ctx,
                _dir: dir,
                srv,
                conn,
                client_rx,
                server_rx,
            }
        }

        /// Another connection to the same server, and where its answers go.
        fn connect(&self) -> (u64, mpsc::UnboundedReceiver<Vec<u8>>) {
            let (tx, rx) = mpsc::unbounded_channel();
            (self.srv.connect(tx).unwrap(), rx)
        }

        fn client_says(&mut self, v: &str) {
            client_message(&self.ctx, &self.srv, self.conn, v.as_bytes());
        }

        fn says_on(&self, conn: u64, v: &str) {
            client_message(&self.ctx, &self.srv, conn, v.as_bytes());
        }

        fn server_says(&mut self, v: &str) {
            server_message(&self.ctx, &self.srv, v.as_bytes());
        }

        fn take(rx: &mut mpsc::UnboundedReceiver<Vec<u8>>) -> Vec<Value> {
            let mut out = Vec::new();
            while let Ok(b) = rx.try_recv() {
                out.push(serde_json::from_slice(&b).unwrap());
            }
            out
        }

        fn client(&mut self) -> Vec<Value> {
            Wire::take(&mut self.client_rx)
        }

        fn server(&mut self) -> Vec<Value> {
            Wire::take(&mut self.server_rx)
        }

        fn record(&self) -> Vec<Value> {
            std::fs::read_to_string(
                self.ctx
                    .policy
                    .output_dir
                    .join(crate::run_dir::RunDir::GATEWAY_RECORD),
            )
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
        }
    }

    impl Wire {
        /// The server answers its request `to` (as the server saw it) with `result`.
        fn server_answers(&mut self, to: &Value, result: Value) {
            let a = json!({"jsonrpc": "2.0", "id": to["id"], "result": result});
            self.server_says(&a.to_string());
        }
    }

    #[test]
    fn on_the_wire_initialize_roots_and_lists_are_the_gateways() {
        let mut w = Wire::new();
        w.client_says(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"roots":{"listChanged":true},"sampling":{}}}}"#);
        let s = w.server();
        assert_eq!(
            s[0]["params"]["capabilities"],
            json!({"roots": {"listChanged": false}})
        );
        w.server_answers(&s[0], json!({"capabilities":{"tools":{},"resources":{}}}));
        let c = w.client();
        assert_eq!(c[0]["id"], 0);
        assert_eq!(c[0]["result"]["capabilities"], json!({"tools": {}}));
        // The server asks for roots: the gateway answers, the worker is never asked.
        w.server_says(r#"{"jsonrpc":"2.0","id":"r1","method":"roots/list"}"#);
        assert!(w.client().is_empty());
        let s = w.server();
        let uri = s[0]["result"]["roots"][0]["uri"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            uri.starts_with("file:///") && s[0]["result"]["roots"].as_array().unwrap().len() == 1
        );
        // …nor for a completion of its own.
        w.server_says(
            r#"{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}"#,
        );
        assert!(w.client().is_empty());
        assert!(w.server()[0]["error"].is_object());
        w.client_says(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        let s = w.server();
        assert_eq!(s.len(), 1);
        w.server_answers(&s[0], json!({"tools":[{"name":"browser_navigate"},{"name":"browser_run_code_unsafe"},{"name":"webmcp_place_order"}]}));
        let c = w.client();
        assert_eq!(c[0]["id"], 1);
        // The server's one listed tool, then Leopold's own (this server hosts them).
        let names: Vec<&Value> = c[0]["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| &t["name"])
            .collect();
        assert_eq!(
            names,
            [
                &json!("browser_navigate"),
                &json!("report_finding"),
                &json!("finish")
            ]
        );
        assert_eq!(
            c[0]["result"]["tools"][0],
            json!({"name": "browser_navigate"})
        );
        // An answer to nothing the worker asked, and a server line that is not JSON: dropped.
        w.server_says(
            r#"{"jsonrpc":"2.0","id":77,"result":{"tools":[{"name":"browser_evaluate"}]}}"#,
        );
        w.server_says("not json");
        assert!(w.client().is_empty());
    }

    #[test]
    fn on_the_wire_a_denied_call_is_answered_and_never_forwarded() {
        let mut w = Wire::new();
        w.client_says(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"browser_navigate","arguments":{"url":"https://evil.example/?t=1"}}}"#);
        assert!(w.server().is_empty(), "never forwarded");
        let c = w.client();
        assert_eq!(c[0]["id"], 5);
        assert_eq!(c[0]["result"]["isError"], true);
        let text = c[0]["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("Leopold persona guard: ")
                && text.ends_with("(reason: outside_allowlist)"),
            "{text}"
        );
        let sh = w.ctx.shared.lock().unwrap();
        assert_eq!(sh.denials[0].tool, "mcp__browser__browser_navigate");
        drop(sh);
        // Allowed: forwarded under the gateway's id, its answer passed back and counted.
        w.client_says(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"browser_navigate","arguments":{"url":"https://staging.example.com/"}}}"#);
        let s = w.server();
        assert_eq!(s[0]["params"]["name"], "browser_navigate");
        w.server_answers(&s[0], json!({"content":[{"type":"text","text":"### Page\n- Page URL: https://staging.example.com/?s=1\n- Page Title: Shop"}]}));
        assert_eq!(w.client()[0]["id"], 6);
        // Kept for the comparison with the stream: reduced as the record keeps it, answered.
        assert_eq!(
            w.ctx.shared.lock().unwrap().forwarded,
            [Forwarded {
                seq: 2,
                tool: "mcp__browser__browser_navigate".into(),
                call: json!({"url": {"leopold_url": {"scheme": "https", "host": "staging.example.com", "path": "/"}}}),
                answer: Some(Answer {
                    is_error: false,
                    page_host: Some("staging.example.com".into())
                }),
            }]
        );
        // Refused outright: a batch, not JSON, an unknown method; a notification of roots.
        for bad in [
            r#"[{"jsonrpc":"2.0","id":7,"method":"tools/call"}]"#,
            "{oops",
            r#"7"#,
        ] {
            w.client_says(bad);
            assert!(w.client()[0]["error"].is_object(), "{bad}");
        }
        w.client_says(r#"{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}"#);
        assert!(w.client()[0]["error"].is_object());
        w.client_says(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
        assert!(w.server().is_empty() && w.client().is_empty());
        // The record: hosts only, never a URL; each refusal is a line of its own.
        let rec = std::fs::read_to_string(
            w.ctx
                .policy
                .output_dir
                .join(crate::run_dir::RunDir::GATEWAY_RECORD),
        )
        .unwrap();
        assert!(!rec.contains("://") && !rec.contains("t=1"), "{rec}");
        assert!(
            rec.contains("\"page_host\":\"staging.example.com\"")
                && rec.contains("\"page_title\":\"Shop\""),
            "{rec}"
        );
        let refused: Vec<Value> = w
            .record()
            .into_iter()
            .filter(|l| l["event"] == "message")
            .collect();
        assert_eq!(refused.len(), 5, "{rec}");
        assert!(refused
            .iter()
            .all(|l| l["verdict"] == "denied" && l["reason"] == "gateway_unjudgeable"));
        assert_eq!(refused[3]["method"], "resources/read");
        assert_eq!(refused[4]["method"], "notifications/roots/list_changed");
    }

    /// A `tools/call` without an id (a notification) is never forwarded, whatever it asks, and
    /// is recorded; nor is a request reusing an id still in flight, whose answer would have been
    /// taken for the first's.
    #[test]
    fn on_the_wire_a_notification_call_and_a_reused_id_are_refused_and_recorded() {
        let mut w = Wire::new();
        w.client_says(r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"browser_navigate","arguments":{"url":"https://evil.example/"}}}"#);
        w.client_says(r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"browser_click","arguments":{"element":"Place order","ref":"e7"}}}"#);
        // Allowed calls, as notifications too: refused before any judgement.
        w.client_says(r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"browser_navigate","arguments":{"url":"https://staging.example.com/"}}}"#);
        assert!(w.server().is_empty(), "never forwarded");
        assert!(w.client().is_empty(), "a notification has no answer");

        w.client_says(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"browser_navigate","arguments":{"url":"https://staging.example.com/cart"}}}"#);
        w.client_says(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"browser_navigate","arguments":{"url":"https://staging.example.com/checkout"}}}"#);
        let s = w.server();
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(
            s[0]["params"]["arguments"]["url"],
            "https://staging.example.com/cart"
        );
        let c = w.client();
        assert_eq!(c[0]["id"], 9);
        assert!(c[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already in flight"));
        // The first call's answer is the first call's, in the record as well.
        w.server_answers(&s[0], json!({"content":[{"type":"text","text":"- Page URL: https://staging.example.com/cart\n- Page Title: Cart"}]}));
        assert_eq!(w.client()[0]["result"]["content"][0]["type"], "text");
        // Its id is free again.
        w.client_says(r#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#);
        assert_eq!(w.server().len(), 1);
        // Ids that are not a string or an integer are refused.
        w.client_says(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#);
        w.client_says(r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#);
        assert!(w.server().is_empty());
        assert_eq!(w.client().len(), 2);

        let rec = w.record();
        let refused: Vec<&Value> = rec.iter().filter(|l| l["event"] == "message").collect();
        assert_eq!(refused.len(), 6, "{rec:?}");
        for (l, tool) in
            refused[..3]
                .iter()
                .zip(["browser_navigate", "browser_click", "browser_navigate"])
        {
            assert_eq!(l["method"], "tools/call");
            assert_eq!(l["tool"], tool);
            assert!(
                l["detail"].as_str().unwrap().contains("notification"),
                "{l}"
            );
        }
        assert!(refused[3]["detail"]
            .as_str()
            .unwrap()
            .contains("already in flight"));
        let result = rec.iter().find(|l| l["event"] == "result").unwrap();
        assert_eq!(result["page_title"], "Cart");
        assert_eq!(
            result["seq"],
            rec.iter().find(|l| l["event"] == "call").unwrap()["seq"]
        );
    }

    /// Connections share the run's one server: each request goes up under an id of the
    /// gateway's and its answer comes back to the connection that asked, with that connection's
    /// id; the server is initialized once, later connections answered from its answer; a
    /// connection's cancellation names the server's id for its request.
    #[test]
    fn on_the_wire_connections_share_one_server() {
        let mut w = Wire::new();
        let (b, mut b_rx) = w.connect();
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}"#;
        w.client_says(init);
        w.says_on(b, init);
        let s = w.server();
        assert_eq!(s.len(), 1, "initialized once: {s:?}");
        w.server_answers(
            &s[0],
            json!({"protocolVersion":"2025-06-18","capabilities":{"tools":{}}}),
        );
        let (a0, b0) = (w.client(), Wire::take(&mut b_rx));
        assert_eq!(
            (a0[0]["id"].clone(), b0[0]["id"].clone()),
            (json!(0), json!(0))
        );
        assert_eq!(a0[0]["result"], b0[0]["result"]);
        // A third connection, after: answered at once, the server not asked again.
        let (c, mut c_rx) = w.connect();
        w.says_on(
            c,
            r#"{"jsonrpc":"2.0","id":"x","method":"initialize","params":{}}"#,
        );
        assert!(w.server().is_empty());
        assert_eq!(Wire::take(&mut c_rx)[0]["id"], "x");
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        w.client_says(initialized);
        w.says_on(b, initialized);
        assert_eq!(w.server().len(), 1, "initialized is said once");

        // The same id on two connections: two requests, each answer to its own.
        let call = |u: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"browser_navigate","arguments":{{"url":"https://staging.example.com/{u}"}}}}}}"#
            )
        };
        w.client_says(&call("a"));
        w.says_on(b, &call("b"));
        let s = w.server();
        assert_eq!(s.len(), 2);
        assert_ne!(s[0]["id"], s[1]["id"]);
        w.server_answers(&s[1], json!({"content":[{"type":"text","text":"b"}]}));
        w.server_answers(&s[0], json!({"content":[{"type":"text","text":"a"}]}));
        let (a1, b1) = (w.client(), Wire::take(&mut b_rx));
        assert_eq!(a1[0]["result"]["content"][0]["text"], "a");
        assert_eq!(b1[0]["result"]["content"][0]["text"], "b");
        assert_eq!(
            (a1[0]["id"].clone(), b1[0]["id"].clone()),
            (json!(1), json!(1))
        );

        // A cancellation names the worker's id; the server gets its own; one for nothing in
        // flight is refused.
        w.says_on(b, &call("slow"));
        let s = w.server();
        w.says_on(
            b,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        );
        assert_eq!(w.server()[0]["params"]["requestId"], s[0]["id"]);
        w.client_says(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        );
        assert!(w.server().is_empty());
        // A connection gone: the answer to its call is still recorded, then dropped.
        w.srv.disconnect(b);
        w.server_answers(
            &s[0],
            json!({"content":[{"type":"text","text":"- Page Title: Slow"}]}),
        );
        assert!(w.client().is_empty());
        assert!(w.record().iter().any(|l| l["page_title"] == "Slow"));
        // The server gone: no connection is served.
        w.srv.gone();
        assert!(w.srv.connect(mpsc::unbounded_channel().0).is_none());
    }

    /// A worker calling until the record is full: past `--max-records` no line is written, the
    /// next call is refused and never forwarded, and the run's tripwire names the limit.
    #[test]
    fn a_full_record_stops_growing_and_forwards_no_unrecorded_call() {
        let mut w = Wire::new();
        let tripwire = crate::sandbox::limits::Tripwire::default();
        {
            let mut rec = w.ctx.record.lock().unwrap();
            rec.max = Some(4096);
            rec.tripwire = tripwire.clone();
        }
        let call = |id: u32| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"browser_navigate","arguments":{{"url":"https://staging.example.com/{}"}}}}}}"#,
                "p".repeat(200)
            )
        };
        let mut forwarded = 0;
        for id in 0..100 {
            w.client_says(&call(id));
            forwarded += w.server().len();
        }
        let path = w
            .ctx
            .policy
            .output_dir
            .join(crate::run_dir::RunDir::GATEWAY_RECORD);
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size <= 4096, "{size}");
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        assert_eq!(forwarded, lines, "every forwarded call is recorded");
        assert!(forwarded > 0 && forwarded < 100);
        let last = w.client();
        assert_eq!(last.last().unwrap()["result"]["isError"], true);
        assert_eq!(
            tripwire.tripped().as_deref(),
            Some("the gateway record reached --max-records 4 KiB")
        );
    }
}
