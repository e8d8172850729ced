//! Eight `--no-contain` runs started at once in one project: exactly one runs, the others exit 4
//! at once, name the active run and why it runs alone, and touch nothing. (Boxed runs run side by
//! side: `side_by_side`.)

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::kit::*;

#[test]
fn eight_no_contain_runs_at_once_exactly_one_runs_the_others_exit_4_untouched() {
    let sb = Sandbox::unboxed();
    sb.set_script("@sleep 5000\n");
    let before = sb.snapshot();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let b = barrier.clone();
            let mut cmd = sb.run_cmd("claude", &[]);
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
            std::thread::spawn(move || {
                b.wait();
                let t = Instant::now();
                let child = cmd.spawn().unwrap();
                let out = wait_output(child, 30);
                (out, t.elapsed())
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let codes: Vec<Option<i32>> = results.iter().map(|(o, _)| o.status.code()).collect();
    assert_eq!(
        codes.iter().filter(|c| **c == Some(0)).count(),
        1,
        "{codes:?}"
    );
    assert_eq!(
        codes.iter().filter(|c| **c == Some(4)).count(),
        7,
        "{codes:?}"
    );
    for (o, took) in &results {
        if o.status.code() == Some(4) {
            let e = stderr(o);
            assert_has(&e, "another persona run is active");
            assert_has(
                &e,
                "runs alone because it wires the project's settings file",
            );
            assert!(
                e.contains("checkout") && e.contains("pid "),
                "names flow and pid: {e}"
            );
            assert!(
                *took < Duration::from_millis(1400),
                "exit 4 must be at once, took {took:?}"
            );
        }
    }
    assert_eq!(sb.run_dirs().len(), 1, "only the winner made a run dir");
    assert_eq!(sb.snapshot(), before);
    assert_eq!(sb.persona_listing(), unboxed_run_listing());
}

#[test]
fn recover_refuses_while_a_no_contain_run_is_live() {
    let sb = Sandbox::unboxed();
    sb.set_script("@sleep 5000\n");
    let child = sb
        .run_cmd("claude", &[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(10, "the worker", || active_worker_pid(&sb).is_some());
    let out = sb.recover();
    assert_eq!(out.status.code(), Some(4));
    assert_has(&stderr(&out), "refusing to recover");
    assert!(sb.active().exists(), "the live run's state is untouched");
    let out = wait_output(child, 20);
    assert_eq!(out.status.code(), Some(0));
}
