//! The run's model and budgets (docs/reference.md#cost-and-budgets): `--model` and `--max-turns`
//! passed to the harness, and the watch that stops the worker the moment the usage the stream
//! reports passes `--max-tokens`, `--max-cost-usd` or `--max-turns` (`over_budget`), or the
//! persona repeats one call the flow's `max_repeats` times running (`looping`,
//! [`crate::looping`]).

use std::path::Path;

use super::outcome::Stop;
use crate::cli::BudgetArgs;
use crate::harness::Harness;
use crate::meter::Meter;
use crate::observe::Batch;
use crate::usage::{dollars, grouped, Usage};

/// What the harness is given for `--model`, `--max-turns` and `--max-cost-usd`: Claude
/// `--model`, `--max-turns` and `--max-budget-usd` (it stops itself, and says so in its `result`);
/// Codex `-m` (it has no turn or spending limit: Leopold counts its turns).
pub fn harness_args(kind: Harness, b: &BudgetArgs) -> Vec<String> {
    let mut a = Vec::new();
    match kind {
        Harness::Claude => {
            if let Some(m) = &b.model {
                a.extend(["--model".to_owned(), m.clone()]);
            }
            if let Some(n) = b.max_turns {
                a.extend(["--max-turns".to_owned(), n.to_string()]);
            }
            if let Some(usd) = b.max_cost_usd {
                a.extend(["--max-budget-usd".to_owned(), usd.to_string()]);
            }
        }
        Harness::Codex => {
            if let Some(m) = &b.model {
                a.extend(["-m".to_owned(), m.clone()]);
            }
        }
    }
    a
}

/// The model a run asks for: `--model`, else (Codex, whose stream does not name it) the `model`
/// of the user's `config.toml`, which the run's own copy keeps. Claude's stream names its model.
pub fn asked_model(kind: Harness, b: &BudgetArgs, codex_home: &Path) -> Option<String> {
    if b.model.is_some() || kind != Harness::Codex {
        return b.model.clone();
    }
    let text = std::fs::read_to_string(codex_home.join("config.toml")).ok()?;
    let doc: toml_edit::DocumentMut = text.parse().ok()?;
    doc.get("model")?.as_str().map(str::to_owned)
}

/// The budgets and the loop watch, checked after each batch of the stream.
#[derive(Debug)]
pub struct Watch {
    budget: BudgetArgs,
    max_repeats: u32,
    repeats: crate::looping::Repeats,
    /// A budget stop was asked for (it is asked once).
    over: bool,
}

impl Watch {
    pub fn new(budget: &BudgetArgs, max_repeats: u32) -> Watch {
        Watch {
            budget: budget.clone(),
            max_repeats,
            repeats: crate::looping::Repeats::default(),
            over: false,
        }
    }

    /// A batch's calls and the usage so far: the stop to make, the first time one is due.
    pub fn check(&mut self, batch: &Batch, meter: &Meter) -> Option<Stop> {
        let mut stop = None;
        for a in &batch.actions {
            if let Some(why) = self
                .repeats
                .add(a.repeat.as_ref(), &a.tool, self.max_repeats)
            {
                stop.get_or_insert(Stop::Looping(why));
            }
        }
        // A harness that stopped at its own limit is ending by itself: [`Watch::at_end`] says so
        // (Claude's `num_turns` after `error_max_turns` is one past the limit it stopped at,
        // which is no reason of Leopold's to stop it).
        let harness_stopped = meter.turn_limit_hit() || meter.budget_limit_hit();
        if !self.over && !harness_stopped {
            if let Some(why) = meter.usage().and_then(|u| over_budget(&self.budget, u)) {
                self.over = true;
                stop.get_or_insert(Stop::OverBudget(why));
            }
        }
        stop
    }

    /// Once the stream has ended: the harness's own stop at its limit, else what
    /// [`Watch::check`] finds in the last batch and the final totals.
    pub fn at_end(&mut self, fin: &Batch, meter: &Meter) -> Option<Stop> {
        let passed = self.check(fin, meter);
        self.harness_stop(meter).map(Stop::OverBudget).or(passed)
    }

    /// The harness's own stop at its turn or spending limit (Claude's `error_max_turns`,
    /// `error_max_budget_usd`: it exits 1, which is no failure of the worker).
    fn harness_stop(&self, meter: &Meter) -> Option<String> {
        let usage = meter.usage();
        if meter.turn_limit_hit() {
            let turns = usage.map_or(0, |u| u.turns);
            return Some(match self.budget.max_turns {
                Some(n) => format!("turns reached --max-turns {n} ({turns}: the harness stopped)"),
                None => format!("turns reached the harness's own limit ({turns})"),
            });
        }
        if meter.budget_limit_hit() {
            let spent = usage
                .and_then(|u| u.cost_usd)
                .map_or_else(String::new, |c| {
                    format!(" ({}: the harness stopped)", dollars(c))
                });
            return Some(match self.budget.max_cost_usd {
                Some(max) => format!("cost reached --max-cost-usd {max}{spent}"),
                None => format!("cost reached the harness's own limit{spent}"),
            });
        }
        None
    }
}

/// The first budget `u` passed, as the reason says it: `tokens reached --max-tokens 20000
/// (20,512)`.
fn over_budget(b: &BudgetArgs, u: &Usage) -> Option<String> {
    if let Some(max) = b.max_tokens.filter(|m| u.tokens() > *m) {
        return Some(format!(
            "tokens reached --max-tokens {max} ({})",
            grouped(u.tokens())
        ));
    }
    if let Some((max, cost)) = b.max_cost_usd.zip(u.cost_usd).filter(|(m, c)| c > m) {
        return Some(format!(
            "cost reached --max-cost-usd {max} ({})",
            dollars(cost)
        ));
    }
    if let Some(max) = b.max_turns.filter(|m| u.turns > *m) {
        return Some(format!("turns reached --max-turns {max} ({})", u.turns));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(tokens: Option<u64>, usd: Option<f64>, turns: Option<u64>) -> BudgetArgs {
        BudgetArgs {
            model: None,
            max_turns: turns,
            max_tokens: tokens,
            max_cost_usd: usd,
        }
    }

    #[test]
    fn each_budget_names_its_flag_and_the_figure_once_passed() {
        let u = Usage {
            turns: 4,
            input_tokens: 20_000,
            output_tokens: 512,
            cost_usd: Some(0.6),
            ..Usage::default()
        };
        assert_eq!(
            over_budget(&budget(Some(20_000), None, None), &u).as_deref(),
            Some("tokens reached --max-tokens 20000 (20,512)")
        );
        assert_eq!(over_budget(&budget(Some(20_512), None, None), &u), None);
        assert_eq!(
            over_budget(&budget(None, Some(0.5), None), &u).as_deref(),
            Some("cost reached --max-cost-usd 0.5 ($0.6000)")
        );
        assert_eq!(
            over_budget(&budget(None, None, Some(3)), &u).as_deref(),
            Some("turns reached --max-turns 3 (4)")
        );
        assert_eq!(over_budget(&budget(None, None, None), &u), None);
    }

    #[test]
    fn the_model_and_the_limits_reach_each_harness_its_own_way() {
        let b = BudgetArgs {
            model: Some("m1".into()),
            ..budget(Some(9), Some(0.25), Some(7))
        };
        assert_eq!(
            harness_args(Harness::Claude, &b),
            [
                "--model",
                "m1",
                "--max-turns",
                "7",
                "--max-budget-usd",
                "0.25"
            ]
        );
        assert_eq!(harness_args(Harness::Codex, &b), ["-m", "m1"]);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), "model = \"gpt-x\"\n").unwrap();
        let none = budget(None, None, None);
        assert_eq!(
            asked_model(Harness::Codex, &none, dir.path()).as_deref(),
            Some("gpt-x")
        );
        assert_eq!(asked_model(Harness::Claude, &none, dir.path()), None);
        assert_eq!(
            asked_model(Harness::Codex, &b, dir.path()).as_deref(),
            Some("m1")
        );
    }
}
