//! The selector: which removal strategy runs, in three layers, each decision named.
//!
//! 1. **Profile**: a model profile that prefers `middle` or `oldest` decides outright.
//! 2. **Rules** (profiles that prefer `auto`): `RULES` in order, the first match wins.
//! 3. **Scoring**: when no rule matches, or the winner's confidence is below
//!    `CONFIDENCE_THRESHOLD`, the three strategies run and the one with the higher
//!    `efficiency = 0.6 × token_reduction + 0.4 × message_preservation` wins; only candidates that
//!    fit compete; of equal scores the one keeping more tokens wins, then middle, then oldest.
//!
//! With [`Optimize::Cost`] (`--optimize cost`) the rules and the scoring give way to price: the
//! strategies run and, among those that fit, the one with the lowest expected input cost over
//! the next [`COST_HORIZON`] calls under prompt caching wins ([`CostModel::expected`]).
//!
//! The reference is the hybrid compression strategy of the agent framework cipher; unlike it,
//! a candidate that misses the budget never wins, and units (not single messages) are removed.

use crate::account::{Candidate, Decision, Features, Layer, RuleCheck, Severity, Strategy};
use crate::catalog::{Preference, Profile};
use crate::cost::CostModel;
use crate::strategy::tools::ToolOptions;
use crate::strategy::{self, Limits, Plan};
use crate::tokens::REPLY_PRIMING;
use crate::units::Unit;

/// A winning rule's confidence below this sends the decision to scoring (docs/decisions.md).
pub(crate) const CONFIDENCE_THRESHOLD: f64 = 0.6;
/// Rule 1 applies below this many messages (docs/decisions.md).
pub(crate) const SMALL_CONVERSATION: usize = 20;
/// Rule 2 applies above this many messages (docs/decisions.md).
pub(crate) const LARGE_CONVERSATION: usize = 30;
/// Rule 3 applies when the last messages hold more than this percentage of the tokens.
pub(crate) const RECENT_SHARE_PCT: usize = 40;
/// Rule 6 applies when the current request's best-scoring history holds at least this
/// percentage of its relevance (`Features::refers_back`) …
pub(crate) const REFERS_BACK_PCT: usize = 20;
/// … in a chat of at least this many messages: the best-scoring √n are then at most an eighth
/// of the history (in a short one they are most of it, and the share says nothing).
pub(crate) const LONG_CHAT: usize = 64;
/// Weight of token reduction in the efficiency score, in tenths (docs/decisions.md: 0.6).
const REDUCTION_WEIGHT: u128 = 6;
/// Weight of message preservation in the efficiency score, in tenths (docs/decisions.md: 0.4).
const PRESERVATION_WEIGHT: u128 = 4;
/// What the selector optimizes once the provider layer has not decided.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Optimize {
    /// The rules, then the efficiency score (docs/decisions.md).
    #[default]
    Efficiency,
    /// The lowest expected input cost over the next calls; rules and profile preferences give
    /// way to it.
    Cost(CostModel),
}

/// The tool-trimming options a run uses: under [`Optimize::Cost`], clearing happens only in
/// batches that repay their cache write ([`CostModel::min_clearing`]).
pub(crate) fn tool_options(
    tuning: &SelectorTuning,
    tools: &ToolOptions,
    total: usize,
) -> ToolOptions {
    let mut tools = tools.clone();
    if let Optimize::Cost(model) = tuning.optimize {
        tools.clear_at_least = tools.clear_at_least.max(model.min_clearing(total));
    }
    tools
}

/// Selector settings; [`Default`] gives the documented constants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SelectorTuning {
    /// See `CONFIDENCE_THRESHOLD`.
    pub confidence_threshold: f64,
    /// See `SMALL_CONVERSATION`.
    pub small_conversation: usize,
    /// See `LARGE_CONVERSATION`.
    pub large_conversation: usize,
    /// See `RECENT_SHARE_PCT`.
    pub recent_share_pct: usize,
    /// See `REFERS_BACK_PCT`.
    pub refers_back_pct: usize,
    /// See `LONG_CHAT`.
    pub long_chat: usize,
    /// What the selector optimizes.
    pub optimize: Optimize,
}

impl Default for SelectorTuning {
    fn default() -> Self {
        Self {
            confidence_threshold: CONFIDENCE_THRESHOLD,
            small_conversation: SMALL_CONVERSATION,
            large_conversation: LARGE_CONVERSATION,
            recent_share_pct: RECENT_SHARE_PCT,
            refers_back_pct: REFERS_BACK_PCT,
            long_chat: LONG_CHAT,
            optimize: Optimize::Efficiency,
        }
    }
}

/// One conversation rule: when it matches, what it picks and how sure it is.
pub(crate) struct Rule {
    /// Its number in the report (1–6).
    pub number: u8,
    /// What it checks and why, in one line.
    pub description: &'static str,
    /// The condition over the features.
    pub when: fn(&Features, &SelectorTuning) -> bool,
    /// The strategy it picks.
    pub then: Strategy,
    /// How sure it is.
    pub confidence: f64,
}

/// The conversation rules (docs/decisions.md), in order (rule 6 second); the first match wins.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        number: 1,
        description: "light severity in a short conversation: little to remove, keep the task at the head",
        when: |f, p| f.severity == Severity::Light && f.messages < p.small_conversation,
        then: Strategy::Middle,
        confidence: 0.8,
    },
    Rule {
        number: 6,
        description: "a chat whose current request refers back to a few turns: keep what it names",
        when: |f, p| {
            f.refers_back * 100.0 >= p.refers_back_pct as f64
                && f.messages >= p.long_chat
                && !f.has_tool_messages
        },
        then: Strategy::Relevant,
        confidence: 0.8,
    },
    Rule {
        number: 2,
        description: "heavy severity in a long conversation: much must go, the oldest history matters least",
        when: |f, p| f.severity == Severity::Heavy && f.messages > p.large_conversation,
        then: Strategy::Oldest,
        confidence: 0.9,
    },
    Rule {
        number: 3,
        description: "the last messages hold most of the weight: keep them and the head, cut the middle",
        when: |f, p| {
            let [last, total] = f.last_over_tokens;
            last * 100 > total * p.recent_share_pct
        },
        then: Strategy::Middle,
        confidence: 0.7,
    },
    Rule {
        number: 4,
        description: "long messages under real pressure: removing from the start frees the most",
        when: |f, _| f.has_long_messages && f.severity != Severity::Light,
        then: Strategy::Oldest,
        confidence: 0.6,
    },
    Rule {
        number: 5,
        description: "tool or system messages: keep the setup and the task at the head",
        when: |f, _| f.has_tool_messages || f.has_system_messages,
        then: Strategy::Middle,
        confidence: 0.7,
    },
];

/// Every rule's verdict over `features`, in order (whichever layer decides, and also when no
/// removal is needed).
fn verdicts(features: &Features, tuning: &SelectorTuning) -> Vec<RuleCheck> {
    RULES
        .iter()
        .map(|rule| RuleCheck {
            number: rule.number,
            description: rule.description,
            matched: (rule.when)(features, tuning),
            strategy: rule.then,
            confidence: rule.confidence,
        })
        .collect()
}

/// The efficiency score (docs/decisions.md), as a float for the report.
pub(crate) fn efficiency(
    tokens_before: usize,
    tokens_after: usize,
    kept: usize,
    total: usize,
) -> f64 {
    if tokens_before == 0 || total == 0 {
        return 0.0;
    }
    let reduction = tokens_before.saturating_sub(tokens_after) as f64 / tokens_before as f64;
    let preservation = kept as f64 / total as f64;
    0.6 * reduction + 0.4 * preservation
}

/// The efficiency score scaled by `10 × tokens_before × total`, exact, for comparisons.
fn efficiency_scaled(tokens_before: usize, tokens_after: usize, kept: usize, total: usize) -> u128 {
    let (before, after) = (tokens_before as u128, tokens_after as u128);
    let (kept, total) = (kept as u128, total as u128);
    REDUCTION_WEIGHT * before.saturating_sub(after) * total + PRESERVATION_WEIGHT * kept * before
}

/// The selector of one run: the layers that do not depend on the limits — a forced strategy,
/// the cost optimization, the profile's preference, the rules' verdicts — decided once, when
/// the features are measured; [`Selector::decide`] then only plans, for each set of limits the
/// planner tries.
pub(crate) struct Selector<'a> {
    /// The input's features, which the rules and the scores read.
    pub(crate) features: &'a Features,
    tuning: &'a SelectorTuning,
    /// Every rule's verdict over the features, in order: the report's `rules`.
    pub(crate) checks: Vec<RuleCheck>,
    choice: Choice,
}

/// What the limit-independent layers chose.
#[derive(Clone, Copy)]
enum Choice {
    /// One strategy, by the layer that chose it (and the rule, when one did).
    One(Layer, Strategy, Option<&'static Rule>),
    /// Both strategies, priced (`--optimize cost`).
    Priced,
    /// Both strategies, scored (no confident rule).
    Scored,
}

impl<'a> Selector<'a> {
    /// Runs the layers that read only the profile, the options and the features, in order: a
    /// forced strategy, the cost optimization, the profile's preference, the first matching
    /// rule (when confident enough); else both strategies are to be scored.
    pub(crate) fn new(
        profile: &Profile,
        forced: Option<Strategy>,
        features: &'a Features,
        tuning: &'a SelectorTuning,
    ) -> Self {
        let checks = verdicts(features, tuning);
        let winner = RULES
            .iter()
            .zip(&checks)
            .find(|(_, check)| check.matched)
            .map(|(rule, _)| rule)
            .filter(|r| r.confidence >= tuning.confidence_threshold);
        let choice = match (forced, tuning.optimize, profile.strategy, winner) {
            (Some(strategy), ..) => Choice::One(Layer::Forced, strategy, None),
            (None, Optimize::Cost(_), ..) => Choice::Priced,
            (None, _, Preference::Middle, _) => Choice::One(Layer::Profile, Strategy::Middle, None),
            (None, _, Preference::Oldest, _) => Choice::One(Layer::Profile, Strategy::Oldest, None),
            (None, _, Preference::Auto, Some(rule)) => {
                Choice::One(Layer::Rule, rule.then, Some(rule))
            }
            (None, _, Preference::Auto, None) => Choice::Scored,
        };
        Self {
            features,
            tuning,
            checks,
            choice,
        }
    }

    /// Whether relevant removal may be planned: chosen, or compared with the others. Its unit
    /// scores are measured only then.
    pub(crate) fn may_plan_relevant(&self) -> bool {
        match self.choice {
            Choice::One(_, strategy, _) => strategy == Strategy::Relevant,
            Choice::Priced | Choice::Scored => true,
        }
    }

    /// The decision and its plan over `units` (relevant removal reading their `relevance`
    /// scores) within `limits`: the chosen strategy's plan, or every strategy's plan and the
    /// one that wins on price or score.
    pub(crate) fn decide(
        &self,
        units: &[Unit],
        relevance: &[f64],
        limits: &Limits,
    ) -> (Decision, Plan) {
        let (features, tuning) = (self.features, self.tuning);
        let candidate = |plan: &Plan| Candidate {
            strategy: plan.strategy,
            tokens_after: plan.tokens_after,
            messages_after: plan.messages_kept,
            efficiency: efficiency(
                features.tokens,
                plan.tokens_after,
                plan.messages_kept,
                features.messages,
            ),
            fits: plan.fits,
            estimated_cost: match tuning.optimize {
                Optimize::Cost(model) => {
                    Some(model.expected(cached_prefix(units, limits, plan), plan.tokens_after))
                }
                Optimize::Efficiency => None,
            },
        };
        let layer = match self.choice {
            Choice::One(layer, strategy, rule) => {
                let plan = strategy::plan(strategy, units, relevance, limits);
                let decision = Decision {
                    layer,
                    strategy,
                    rule: rule.map(|r| r.number),
                    confidence: rule.map(|r| r.confidence),
                    candidates: vec![candidate(&plan)],
                    kept_for: Vec::new(),
                };
                return (decision, plan);
            }
            Choice::Priced => Layer::Cost,
            Choice::Scored => Layer::Scored,
        };
        let mut plans: Vec<Plan> = [Strategy::Middle, Strategy::Oldest, Strategy::Relevant]
            .into_iter()
            .map(|s| strategy::plan(s, units, relevance, limits))
            .collect();
        let candidates: Vec<Candidate> = plans.iter().map(candidate).collect();
        let winner = match layer {
            Layer::Cost => {
                let cost = |c: &Candidate| c.estimated_cost.unwrap_or(f64::INFINITY);
                // Only fitting candidates compete; the first wins ties and middle stands when
                // none fits.
                (1..candidates.len()).fold(0, |best, i| {
                    let better =
                        !candidates[best].fits || cost(&candidates[i]) < cost(&candidates[best]);
                    if candidates[i].fits && better {
                        i
                    } else {
                        best
                    }
                })
            }
            _ => choose(features, &plans),
        };
        let chosen = plans.swap_remove(winner);
        let decision = Decision {
            layer,
            strategy: chosen.strategy,
            rule: None,
            confidence: None,
            candidates,
            kept_for: Vec::new(),
        };
        (decision, chosen)
    }
}

/// Tokens at the head that a plan leaves unchanged: the system prompt and every unit before the
/// first one it removes (a marker goes where that unit was). Assumes nothing before it changed.
fn cached_prefix(units: &[Unit], limits: &Limits, plan: &Plan) -> usize {
    let first = plan.drop.first().copied().unwrap_or(units.len());
    limits.fixed.saturating_sub(REPLY_PRIMING)
        + units[..first].iter().map(|u| u.tokens).sum::<usize>()
}

/// Scores candidate plans (middle first): only fitting candidates compete, the higher efficiency
/// wins; of equal scores the plan that keeps more tokens under the budget wins, then the first
/// (middle, which also stands when none fits, which the pipeline reports as cannot fit). The
/// index of the winner.
fn choose(features: &Features, plans: &[Plan]) -> usize {
    let score = |plan: &Plan| {
        (
            efficiency_scaled(
                features.tokens,
                plan.tokens_after,
                plan.messages_kept,
                features.messages,
            ),
            plan.tokens_after,
        )
    };
    (1..plans.len()).fold(0, |best, i| {
        let (plan, current) = (&plans[i], &plans[best]);
        if plan.fits && (!current.fits || score(plan) > score(current)) {
            i
        } else {
            best
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::FeatureThresholds;

    #[test]
    fn efficiency_matches_the_worked_example() {
        let middle = efficiency(9000, 6200, 12, 15);
        let oldest = efficiency(9000, 5800, 10, 15);
        assert!((middle - 0.506_67).abs() < 5e-6, "{middle}");
        assert!((oldest - 0.48).abs() < 1e-12, "{oldest}");
        assert!(efficiency_scaled(9000, 6200, 12, 15) > efficiency_scaled(9000, 5800, 10, 15));
    }

    fn example_plan(strategy: Strategy, tokens_after: usize, messages_kept: usize) -> Plan {
        let fits = tokens_after <= 6000;
        Plan {
            strategy,
            drop: Vec::new(),
            tokens_after,
            messages_kept,
            fits,
            relaxed: Vec::new(),
        }
    }

    #[test]
    fn of_equal_scores_the_plan_keeping_more_tokens_wins() {
        // 0.6 × 1,000 ÷ 9,000 + 0.4 × 10 ÷ 15 against 0.6 × 1,400 ÷ 9,000 + 0.4 × 9 ÷ 15: equal.
        let f = features(15, 8500, 9000, 0);
        let middle = Plan {
            fits: true,
            ..example_plan(Strategy::Middle, 7600, 9)
        };
        let oldest = Plan {
            fits: true,
            ..example_plan(Strategy::Oldest, 8000, 10)
        };
        assert_eq!(
            efficiency_scaled(9000, 8000, 10, 15),
            efficiency_scaled(9000, 7600, 9, 15)
        );
        assert_eq!(choose(&f, &[middle.clone(), oldest.clone()]), 1);
        assert_eq!(choose(&f, &[middle.clone(), middle.clone()]), 0);
    }

    #[test]
    fn worked_example_chooses_oldest_because_middle_misses_the_target() {
        let f = features(15, 6000, 9000, 0);
        let middle = example_plan(Strategy::Middle, 6200, 12);
        let oldest = example_plan(Strategy::Oldest, 5800, 10);
        assert_eq!(choose(&f, &[middle.clone(), oldest.clone()]), 1);
        // Had middle fitted, its higher efficiency would have won.
        let middle = Plan {
            fits: true,
            ..middle
        };
        assert_eq!(choose(&f, &[middle, oldest]), 0);
    }

    fn features(messages: usize, budget: usize, tokens: usize, last: usize) -> Features {
        let severity = FeatureThresholds::default();
        let severity = if budget * 100 > tokens * severity.light_above_pct {
            Severity::Light
        } else if budget * 100 > tokens * severity.moderate_above_pct {
            Severity::Moderate
        } else {
            Severity::Heavy
        };
        Features {
            messages,
            tokens,
            average_tokens: 0.0,
            target_ratio: budget as f64 / tokens as f64,
            severity,
            recent_ratio: 0.0,
            last_messages_ratio: last as f64 / tokens as f64,
            has_long_messages: false,
            has_tool_messages: false,
            has_system_messages: false,
            tool_token_share: 0.0,
            refers_back: 0.0,
            budget_over_tokens: [budget, tokens],
            last_over_tokens: [last, tokens],
        }
    }

    fn first_match(f: &Features) -> Option<u8> {
        let tuning = SelectorTuning::default();
        RULES
            .iter()
            .find(|r| (r.when)(f, &tuning))
            .map(|r| r.number)
    }

    #[test]
    fn each_rule_fires_on_its_case_and_not_on_a_near_miss() {
        // Rule 1: light (ratio 0.9) and 19 messages; near miss: 20 messages.
        assert_eq!(first_match(&features(19, 900, 1000, 100)), Some(1));
        assert_ne!(first_match(&features(20, 900, 1000, 100)), Some(1));
        // Rule 2: heavy (0.6) and 31 messages; near miss: 30 messages, or ratio 0.61.
        assert_eq!(first_match(&features(31, 600, 1000, 100)), Some(2));
        assert_ne!(first_match(&features(30, 600, 1000, 100)), Some(2));
        assert_ne!(first_match(&features(31, 610, 1000, 100)), Some(2));
        // Rule 3: last messages hold 41%; near miss: exactly 40%.
        assert_eq!(first_match(&features(25, 700, 1000, 410)), Some(3));
        assert_ne!(first_match(&features(25, 700, 1000, 400)), Some(3));
        // Rule 4: long messages at moderate severity; near miss: light severity.
        assert_eq!(
            first_match(&Features {
                has_long_messages: true,
                ..features(25, 700, 1000, 100)
            }),
            Some(4)
        );
        assert_ne!(
            first_match(&Features {
                has_long_messages: true,
                ..features(25, 810, 1000, 100)
            }),
            Some(4)
        );
        // Rule 5: tool messages; near miss: none.
        assert_eq!(
            first_match(&Features {
                has_tool_messages: true,
                ..features(25, 700, 1000, 100)
            }),
            Some(5)
        );
        assert_eq!(first_match(&features(25, 700, 1000, 100)), None);
        // Rule 6: a chat of 64 messages whose request refers back (0.2); near misses: 63
        // messages, a share of 0.19, tool messages.
        let chat = |messages, refers_back, has_tool_messages| Features {
            has_tool_messages,
            refers_back,
            ..features(messages, 700, 1000, 100)
        };
        assert_eq!(first_match(&chat(64, 0.2, false)), Some(6));
        assert_ne!(first_match(&chat(63, 0.2, false)), Some(6));
        assert_ne!(first_match(&chat(64, 0.19, false)), Some(6));
        assert_ne!(first_match(&chat(64, 0.2, true)), Some(6));
    }

    fn units(tokens: &[usize]) -> Vec<Unit> {
        let last = tokens.len() - 1;
        tokens
            .iter()
            .enumerate()
            .map(|(i, &t)| Unit {
                messages: i..i + 1,
                tokens: t,
                pinned: i == last,
                is_system: false,
                is_round: false,
                is_task: false,
                is_current: false,
                has_request: false,
            })
            .collect()
    }

    #[test]
    fn scoring_lets_only_fitting_candidates_compete() {
        // No rule matches: 25 messages, moderate, nothing long, no tools, even weight.
        let f = features(25, 700, 1000, 100);
        let units = units(&[40; 25]);
        let limits = Limits {
            budget: 700,
            fixed: 0,
            marker: 0,
            marker_each: 0,
            preserve_start: 2,
            preserve_end: 4,
            relax: true,
            requests_last: false,
            fold_before: 0,
        };
        let profile = Profile::generic(crate::tokens::Tokenizer::Chars);
        let tuning = SelectorTuning::default();
        let (decision, plan) =
            Selector::new(&profile, None, &f, &tuning).decide(&units, &[], &limits);
        assert_eq!(decision.layer, Layer::Scored);
        assert_eq!(decision.candidates.len(), 3);
        // Both remove the same number of equal units, so they tie and middle wins.
        assert_eq!(plan.strategy, Strategy::Middle);
    }

    #[test]
    fn a_forced_strategy_is_obeyed() {
        let f = features(19, 900, 1000, 100);
        let units = units(&[40; 25]);
        let limits = Limits {
            budget: 900,
            fixed: 0,
            marker: 0,
            marker_each: 0,
            preserve_start: 2,
            preserve_end: 4,
            relax: true,
            requests_last: false,
            fold_before: 0,
        };
        let profile = Profile::generic(crate::tokens::Tokenizer::Chars);
        let tuning = SelectorTuning::default();
        let selector = Selector::new(&profile, Some(Strategy::Oldest), &f, &tuning);
        let (decision, plan) = selector.decide(&units, &[], &limits);
        assert_eq!(
            (decision.layer, plan.strategy),
            (Layer::Forced, Strategy::Oldest)
        );
    }

    /// Sonnet's prices over 20 calls, caching prefixes of 1,024 tokens or more.
    fn sonnet() -> CostModel {
        CostModel {
            calls: 20,
            input: 3.0,
            cache_write: 3.75,
            cache_read: 0.3,
            min_cacheable: 1024,
        }
    }

    #[test]
    fn expected_cost_reads_the_kept_prefix_and_writes_the_rest_once() {
        // 10,000 × 0.30 + 6,000 × 3.75 = 25,500, then 19 × 16,000 × 0.30 = 91,200 (per million).
        assert!((sonnet().expected(10_000, 16_000) - 0.1167).abs() < 1e-12);
        // A prefix under the cacheable minimum is not read: 16,000 × 3.75 + 91,200.
        assert!((sonnet().expected(500, 16_000) - 0.1512).abs() < 1e-12);
        // Clearing must free (3.75 − 0.30) × 10,000 ÷ (0.30 × 20) = 5,750 tokens to repay itself.
        assert_eq!(sonnet().min_clearing(10_000), 5750);
    }

    fn priced(tokens: &[usize], budget: usize) -> (Decision, Plan) {
        let f = features(tokens.len(), budget, tokens.iter().sum(), 0);
        let tuning = SelectorTuning {
            optimize: Optimize::Cost(sonnet()),
            ..SelectorTuning::default()
        };
        let limits = Limits {
            budget,
            fixed: 0,
            marker: 0,
            marker_each: 0,
            preserve_start: 2,
            preserve_end: 4,
            relax: true,
            requests_last: false,
            fold_before: 0,
        };
        let profile = Profile::generic(crate::tokens::Tokenizer::Chars);
        Selector::new(&profile, None, &f, &tuning).decide(&units(tokens), &[], &limits)
    }

    #[test]
    fn cost_keeps_the_cached_head_when_both_remove_as_much() {
        // Equal units: both plans keep 17 of 25; middle keeps the first two (2,000 cached).
        let (decision, plan) = priced(&[1000; 25], 17_000);
        assert_eq!(
            (decision.layer, plan.strategy),
            (Layer::Cost, Strategy::Middle)
        );
        let costs: Vec<f64> = decision
            .candidates
            .iter()
            .map(|c| c.estimated_cost.unwrap())
            .collect();
        assert!(costs[0] < costs[1], "{costs:?}");
    }

    #[test]
    fn cost_drops_a_big_head_when_reading_less_every_call_repays_the_rewrite() {
        // A 3,000-token task, a 100-token answer, ten 200-token units, four 1,500-token ones:
        // 11,100 tokens for a 10,000 budget. Middle drops six small units (9,900 left, 3,100
        // cached): 3,100 × 0.30 + 6,800 × 3.75 + 19 × 9,900 × 0.30 = 82,860. Oldest drops the
        // task (8,100 left, nothing cached): 8,100 × 3.75 + 19 × 8,100 × 0.30 = 76,545.
        let mut tokens = vec![3000, 100];
        tokens.extend([200; 10]);
        tokens.extend([1500; 4]);
        let (decision, plan) = priced(&tokens, 10_000);
        assert_eq!(plan.strategy, Strategy::Oldest);
        let costs: Vec<f64> = decision
            .candidates
            .iter()
            .map(|c| c.estimated_cost.unwrap())
            .collect();
        assert!((costs[0] - 0.082_86).abs() < 1e-12, "{costs:?}");
        assert!((costs[1] - 0.076_545).abs() < 1e-12, "{costs:?}");
    }
}
