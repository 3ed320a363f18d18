//! Tuning knobs: the thresholds the conversation's features are measured against, and the
//! selector's settings (its rule constants, and whether it optimizes the efficiency score or the
//! expected input cost). [`crate::Options`] holds one of each; their defaults are the documented
//! constants.

pub use crate::cost::CostModel;
pub use crate::features::FeatureThresholds;
pub use crate::select::{Optimize, SelectorTuning};
