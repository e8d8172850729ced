//! The loop watch: a persona that repeats the same allowed call on the same target the flow's
//! `max_repeats` times running is going round in circles, and the run stops as `looping`
//! (docs/reference.md#cost-and-budgets).
//!
//! The rule. Two calls are the same when their tool and their arguments, as the guard reduces
//! them (URLs to their parts, typed text to its length, element refs and labels kept), are
//! equal. Only allowed calls count: a denial is the stuck watch's (`max_denials_in_a_row`), and
//! neither counts nor breaks a run of repeats. Looking at the page (a call that neither moves,
//! clicks, types, submits nor fetches: a snapshot, a screenshot, the console, a wait) is how a
//! persona checks what an action did, so it does not break a run of the same action: click,
//! snapshot, click, snapshot, … of one button is the click repeated. A run of looks counts on
//! its own, and any action ends it: a persona that only snapshots, `max_repeats` times running,
//! is looping too.

use leopold_journal::{Action, ActionKind, Outcome};

/// What makes two calls the same call on the same target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepeatKey {
    /// A look at the page rather than an action on it (kind `other`).
    pub looks: bool,
    /// The tool and its reduced arguments.
    pub call: String,
}

/// The key of an action; `None` for a call that is not an allowed one.
pub fn repeat_key(a: &Action) -> Option<RepeatKey> {
    if !matches!(a.outcome, Outcome::Completed | Outcome::Errored) {
        return None;
    }
    let args = a
        .call
        .as_ref()
        .map_or_else(String::new, ToString::to_string);
    Some(RepeatKey {
        looks: a.kind == ActionKind::Other,
        call: format!("{} {args}", a.tool),
    })
}

/// The runs of repeats so far.
#[derive(Debug, Default)]
pub struct Repeats {
    /// The latest action (not a look) and how many times running it came.
    acting: Option<(String, u32)>,
    /// The latest look and how many times running it came, with no action between.
    looking: Option<(String, u32)>,
    /// The stop was asked for (it is asked once).
    tripped: bool,
}

impl Repeats {
    /// Adds one call; returns what the persona repeated, the first time a run reaches `max`.
    pub fn add(&mut self, key: Option<&RepeatKey>, tool: &str, max: u32) -> Option<String> {
        let key = key?;
        let run = if key.looks {
            &mut self.looking
        } else {
            self.looking = None;
            &mut self.acting
        };
        let n = match run {
            Some((k, n)) if *k == key.call => {
                *n += 1;
                *n
            }
            _ => {
                *run = Some((key.call.clone(), 1));
                1
            }
        };
        if n >= max && !self.tripped {
            self.tripped = true;
            return Some(format!(
                "the same call {n} times running: {tool} (flow key max_repeats = {max})"
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(looks: bool, call: &str) -> Option<RepeatKey> {
        Some(RepeatKey {
            looks,
            call: call.into(),
        })
    }

    /// Adds `calls` in turn, `rounds` times over, none of them a loop at a maximum of 5.
    fn add_rounds(r: &mut Repeats, calls: &[(&Option<RepeatKey>, &str)], rounds: usize) {
        for _ in 0..rounds {
            for (k, tool) in calls {
                assert_eq!(r.add(k.as_ref(), tool, 5), None, "{tool}");
            }
        }
    }

    #[test]
    fn the_same_action_max_times_running_is_a_loop_and_looks_between_do_not_break_it() {
        let mut r = Repeats::default();
        let click = key(false, "click e5");
        let snap = key(true, "snapshot");
        add_rounds(&mut r, &[(&click, "click"), (&snap, "snapshot")], 4);
        let why = r.add(click.as_ref(), "click", 5).unwrap();
        assert!(
            why.starts_with("the same call 5 times running: click"),
            "{why}"
        );
        assert_eq!(r.add(click.as_ref(), "click", 5), None, "asked once");
    }

    #[test]
    fn another_action_or_target_breaks_the_run_and_denials_do_not_count() {
        let mut r = Repeats::default();
        let nav = key(false, "navigate /cart");
        // Each followed by a denial (no key).
        add_rounds(&mut r, &[(&nav, "navigate"), (&None, "navigate")], 4);
        assert_eq!(r.add(key(false, "navigate /shop").as_ref(), "n", 5), None);
        assert_eq!(r.add(nav.as_ref(), "navigate", 5), None);
    }

    #[test]
    fn looks_alone_max_times_running_are_a_loop_and_an_action_ends_them() {
        let mut r = Repeats::default();
        let snap = key(true, "snapshot");
        add_rounds(&mut r, &[(&snap, "snapshot")], 4);
        assert_eq!(r.add(key(false, "click e1").as_ref(), "click", 5), None);
        add_rounds(&mut r, &[(&snap, "snapshot")], 4);
        assert!(r.add(snap.as_ref(), "snapshot", 5).is_some());
    }
}
