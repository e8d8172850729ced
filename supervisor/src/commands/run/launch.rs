//! Step 6 of a run: the journal, the gateway with its servers, the browser's network path and
//! the worker, boxed unless `--no-contain`; and the guard's proof settled before the model is
//! reached.

#[allow(clippy::wildcard_imports)]
use super::*;

/// The gateway's side of step 6: the real servers it starts (the provisioned browser, or each
/// stdio server of `--mcp-config`), and the servers the worker is given instead (the relay for
/// each; an HTTP server of a run without the box is passed as it is: docs/security.md#the-gateway).
fn gateway_servers(
    plan: &Plan,
    provisioned: Option<&crate::browser::Provisioned>,
    leopold: &Path,
    sock_dir: &Path,
) -> (Vec<crate::gateway::Upstream>, Vec<McpServer>) {
    let (real, is_provisioned): (Vec<McpServer>, bool) = match provisioned {
        Some(p) => (vec![p.server.clone()], true),
        None => (plan.mcp_servers.clone(), false),
    };
    let mut upstreams = Vec::new();
    let mut given = Vec::new();
    for s in real {
        match s.transport {
            McpTransport::Stdio { command, args, env } => {
                given.push(crate::gateway::relay_server(leopold, sock_dir, &s.name));
                upstreams.push(crate::gateway::Upstream {
                    name: s.name,
                    command,
                    args,
                    env,
                    provisioned: is_provisioned,
                });
            }
            McpTransport::Http { .. } => given.push(s),
        }
    }
    (upstreams, given)
}

/// What step 6 started.
pub(super) struct Launched {
    pub(super) child: tokio::process::Child,
    pub(super) observer: Observer,
    pub(super) boxed: Option<crate::sandbox::Boxed>,
    pub(super) gateway: Option<crate::gateway::Gateway>,
    /// The browser's request-judging proxy, when the run provisions the browser.
    pub(super) web: Option<crate::web::WebPath>,
    /// A boxed run's proof, started once the worker was: the box lets the worker reach its
    /// model only once the guard has denied ([`crate::sandbox::RunBox`]). `Err`: it could not
    /// start (the setup failure to report).
    pub(super) proof: Option<anyhow::Result<proof::Proof>>,
}

/// Step 6: creates the journal (before the worker exists: nothing it does goes unrecorded); then
/// starts the gateway and the worker, in the box unless `--no-contain`. Unboxed, the guard's
/// proof (`proof`, started by the caller) has answered before the worker starts; boxed, it is
/// started once the worker is, and handed back running ([`Launched::proof`]). `Err` is the
/// setup failure to report.
pub(super) fn launch(
    plan: &Plan,
    started: &Started,
    proof: Option<proof::Proof>,
    timings: &mut Timings,
) -> anyhow::Result<Launched> {
    let provisioned = started.provisioned.as_ref();
    let extra: Vec<String> = match provisioned {
        Some(_) => harness::browser_args(plan.kind, crate::browser::SERVER)
            .into_iter()
            .chain(plan.extra.iter().cloned())
            .collect(),
        None => plan.extra.clone(),
    };
    let leopold = std::env::current_exe().context("cannot find the leopold executable's path")?;
    let sock_dir = crate::sandbox::sock_dir_for(&started.run_id);
    let (mut upstreams, given) = gateway_servers(plan, provisioned, &leopold, &sock_dir);
    if let (Some(bwrap), Some(p)) = (&plan.bwrap, provisioned) {
        // The browser in a box of its own, its only way out the proxy (crate::web).
        for up in upstreams.iter_mut().filter(|u| u.provisioned) {
            let programs = plan
                .browser
                .as_ref()
                .map(|b| vec![b.playwright_mcp.clone(), b.node.clone(), b.chromium.clone()])
                .unwrap_or_default();
            let (command, args) = crate::sandbox::browser_box::command(
                &crate::sandbox::browser_box::BrowserBox {
                    bwrap,
                    leopold: &leopold,
                    browser_dir: &p.dir,
                    cwd: &p.output_dir,
                    sock_dir: &sock_dir,
                    programs: &programs,
                },
                &up.command,
                &up.args,
            );
            up.command = command;
            up.args = args;
        }
    }
    let relay_config = started.run_dir.mcp_relay();
    if !given.is_empty() {
        let mut text = serde_json::to_string_pretty(&mcp::mcp_config_json(&given))?;
        text.push('\n');
        // Read by the worker while the run lives, and made again by the next run: nothing waits
        // on the disk for it.
        state::write_atomic_as(&relay_config, text.as_bytes(), state::Durability::Volatile)?;
    }
    // In the run's own Codex home, which the worker reads inside the box.
    let codex_catalog = started
        .ctx
        .codex_home
        .join(harness::codex_catalog::CATALOG_FILE);
    if let Some(text) = &plan.codex_catalog {
        state::write_atomic_as(&codex_catalog, text.as_bytes(), state::Durability::Volatile)?;
    }
    let spec = WorkerSpec {
        kind: plan.kind,
        bin: plan.bin.clone(),
        project: &plan.paths.project,
        prompt: prompt::build_prompt(&plan.flow),
        mcp_config: (!given.is_empty()).then_some(relay_config.as_path()),
        mcp_servers: given,
        guard_settings: started.guard_settings.as_deref(),
        codex_catalog: plan
            .codex_catalog
            .is_some()
            .then_some(codex_catalog.as_path()),
        extra: &extra,
    };
    let mut observer = Observer::new(
        plan.kind,
        &plan.flow,
        &started.run_dir.journal(),
        &started.run_id,
        &started.events_file(plan),
    )?
    .with_model(plan.model.clone());
    // Without the box nothing holds the worker back from its model: the guard is proven before
    // it starts.
    if let Some(p) = proof {
        settle(p, &started.events_file(plan), &mut observer, timings)?;
    }
    let mut cmd = harness::worker_command(&spec, &started.run_id);
    cmd.envs(harness::unboxed_env(plan.kind, &started.ctx));
    // The box: the worker's whole tree in its own namespaces (crate::sandbox).
    let boxed = match &plan.bwrap {
        Some(bwrap) => Some(crate::sandbox::start(crate::sandbox::Launch {
            bwrap,
            project: &plan.paths.project,
            harness_bin: &plan.bin,
            needs: harness::box_needs(
                plan.kind,
                &started.run_dir.scratch(),
                &started.ctx.codex_home,
                Some(plan.ctx.codex_home.join("auth.json")).filter(|p| p.is_file()),
            )?,
            run_id: &started.run_id,
            run_dir: &started.run_dir,
            events_file: started.events_file(plan),
            ro: std::iter::once(plan.flow_path.clone())
                .chain((!spec.mcp_servers.is_empty()).then(|| relay_config.clone()))
                .collect(),
            // Every MCP server runs outside, behind the gateway; inside, only the relay
            // (this binary, already there).
            programs: Vec::new(),
            rw: Vec::new(),
            limits: plan.limits,
            tripwire: plan.tripwire.clone(),
            model_alarm: plan.model_alarm.clone(),
        })?),
        None => None,
    };
    // The gateway, in boxed and unboxed runs alike: the decision depends on no hook.
    // What the browser's proxy refuses, seen by the gateway too (crate::web::refusal_note).
    let web_seen = std::sync::Arc::new(std::sync::Mutex::new(crate::web::Seen::default()));
    let gateway = if upstreams.is_empty() {
        None
    } else {
        let output_dir = provisioned.map_or_else(
            || started.run_dir.browser_output(),
            |p| p.output_dir.clone(),
        );
        let gw = crate::gateway::start(crate::gateway::Start {
            flow: &plan.flow,
            sock_dir: &sock_dir,
            make_sock_dir: boxed.is_none(),
            run_dir: &started.run_dir,
            run_id: &started.run_id,
            output_dir: &output_dir,
            servers: upstreams,
            refs: provisioned.map(|p| crate::browser::RefTracker::new(&p.state, &p.output_dir)),
            max_record: plan.limits.records,
            tripwire: plan.tripwire.clone(),
            web: provisioned.map(|_| web_seen.clone()),
            evidence: plan.evidence,
        })?;
        observer = observer.with_gateway(gw.shared.clone());
        Some(gw)
    };
    // The browser's network path: every request it sends is judged there (crate::web).
    let web = match (provisioned, &gateway) {
        (Some(p), Some(gw)) => {
            let listen = match p.listener.lock().unwrap_or_else(|e| e.into_inner()).take() {
                Some(l) => crate::web::Listen::Tcp(l),
                None => crate::web::Listen::Unix(sock_dir.join(crate::web::SOCK)),
            };
            Some(crate::web::start(crate::web::Start {
                flow: plan.flow.clone(),
                listen,
                authority: p.authority.clone(),
                ca_certs: plan.ca_certs.clone(),
                record: gw.recorder(),
                seen: web_seen.clone(),
            })?)
        }
        _ => None,
    };
    timings.mark("gateway_started");
    let cmd = match &boxed {
        Some(b) => b.wrap(&cmd),
        None => cmd,
    };
    let child = tokio::process::Command::from(cmd)
        .spawn()
        .with_context(|| format!("cannot start the worker {}", plan.bin.display()))?;
    tracing::debug!(pgid = child.id(), "worker {} started", plan.bin.display());
    timings.mark("worker_spawned");
    // In the box, the proof runs beside the worker; its model waits ([`Launched::proof`]).
    let proof = boxed.is_some().then(|| proof::start_proof(plan, started));
    Ok(Launched {
        child,
        observer,
        boxed,
        gateway,
        web,
        proof,
    })
}

/// Waits for the guard's proof; from then on the run's events are the worker's (the proof's own
/// denial lands in events.jsonl before them).
pub(super) fn settle(
    proof: proof::Proof,
    events_file: &std::path::Path,
    observer: &mut Observer,
    timings: &mut Timings,
) -> anyhow::Result<()> {
    proof.verdict()?;
    timings.mark("proved");
    observer.events_from(std::fs::metadata(events_file).map(|m| m.len()).unwrap_or(0));
    Ok(())
}

/// Chromium runs in a session of its own (Playwright starts it detached): whatever of the
/// browser outlived the worker's group carries the run's id, and is stopped.
pub(super) fn stop_browser_leftovers(run_id: &str, out: &super::progress::Reporter) {
    let left = crate::os::kill_crashed_run(None, run_id);
    if !left.is_empty() {
        out.warn(&format!(
            "{} outlived the worker; stopped",
            crate::output::count(left.len() as u64, "browser process")
        ));
    }
}
