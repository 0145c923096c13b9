//! The lab's shared choices: the nominal arm, which solver drives the plant, and the rows of the
//! solver table (each one a ghost arm with its own colour) with their show/hide toggles.

use bevy::prelude::*;
use elbow::{HeadKind, TwoLinkArm};

/// Registers the shared choices with their defaults.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Nominal>().init_resource::<Driver>().init_resource::<Shown>();
}

/// The nominal arm model every solver plans on (the plant's real arm differs from it).
#[derive(Resource, Debug, Clone, Copy, Default)]
pub(crate) struct Nominal(pub(crate) TwoLinkArm);

/// The family of the solver that drives the plant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DriverKind {
    /// Closed form, the branch nearest the current pose.
    Analytic,
    /// Damped least squares, warm-started from the measured pose.
    Iterative,
    /// The learned head in [`Driver::head`].
    Learned,
}

/// Which solver's answer is sent to the plant.
#[derive(Resource, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Driver {
    /// Solver family.
    pub(crate) kind: DriverKind,
    /// The learned head used when `kind` is [`DriverKind::Learned`].
    pub(crate) head: HeadKind,
    /// Wrap the learned head in the safety envelope.
    pub(crate) envelope: bool,
}

impl Default for Driver {
    fn default() -> Self {
        Self { kind: DriverKind::Learned, head: HeadKind::Mdn, envelope: false }
    }
}

impl Driver {
    /// What the panel calls the driver, e.g. `envelope(MDN)`.
    pub(crate) fn name(&self) -> String {
        match self.kind {
            DriverKind::Analytic => "analytic".into(),
            DriverKind::Iterative => "iterative (DLS)".into(),
            DriverKind::Learned if self.envelope => format!("envelope({})", head_label(self.head)),
            DriverKind::Learned => head_label(self.head).into(),
        }
    }
}

/// The display name of a learned head.
pub(crate) fn head_label(head: HeadKind) -> &'static str {
    match head {
        HeadKind::Mse => "MSE",
        HeadKind::Mdn => "MDN",
        HeadKind::Mode => "mode",
        HeadKind::Residual => "residual",
    }
}

/// Position of a head in [`HeadKind::ALL`], used to index per-head arrays.
pub(crate) fn head_index(head: HeadKind) -> usize {
    HeadKind::ALL.iter().position(|&h| h == head).unwrap_or(0)
}

/// One line of the solver table and one ghost arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Row {
    /// Analytic elbow-up branch.
    ElbowUp,
    /// Analytic elbow-down branch.
    ElbowDown,
    /// The average of the two branches: what a squared-error fit converges to.
    Average,
    /// Damped least squares from the measured pose.
    Iterative,
    /// Learned MSE head.
    Mse,
    /// Learned mixture density network (its ghost shows every component).
    Mdn,
    /// Learned mode-conditioned head.
    Mode,
    /// Learned residual hybrid (analytic plus a learned correction for the real arm).
    Residual,
}

impl Row {
    /// Every row, in table order.
    pub(crate) const ALL: [Row; 8] =
        [Row::ElbowUp, Row::ElbowDown, Row::Average, Row::Iterative, Row::Mse, Row::Mdn, Row::Mode, Row::Residual];

    /// Position in [`Row::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// Legend name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Row::ElbowUp => "elbow-up (analytic)",
            Row::ElbowDown => "elbow-down (analytic)",
            Row::Average => "average of branches",
            Row::Iterative => "iterative (DLS)",
            Row::Mse => "MSE head",
            Row::Mdn => "MDN head",
            Row::Mode => "mode head",
            Row::Residual => "residual hybrid",
        }
    }

    /// The ghost's colour; the same swatch appears in the legend.
    pub(crate) fn color(self) -> Color {
        match self {
            Row::ElbowUp => Color::srgb(0.25, 0.72, 1.0),
            Row::ElbowDown => Color::srgb(0.3, 0.9, 0.45),
            Row::Average => Color::srgb(1.0, 0.62, 0.1),
            Row::Iterative => Color::srgb(0.85, 0.82, 0.55),
            Row::Mse => Color::srgb(1.0, 0.22, 0.3),
            Row::Mdn => Color::srgb(0.78, 0.45, 1.0),
            Row::Mode => Color::srgb(1.0, 0.5, 0.82),
            Row::Residual => Color::srgb(0.3, 0.95, 0.9),
        }
    }

    /// The learned head behind this row, if any.
    pub(crate) fn head(self) -> Option<HeadKind> {
        match self {
            Row::Mse => Some(HeadKind::Mse),
            Row::Mdn => Some(HeadKind::Mdn),
            Row::Mode => Some(HeadKind::Mode),
            Row::Residual => Some(HeadKind::Residual),
            _ => None,
        }
    }
}

/// Colour of the plant (the real arm).
pub(crate) const PLANT_COLOR: Color = Color::srgb(0.86, 0.87, 0.92);
/// Colour of the target.
pub(crate) const TARGET_COLOR: Color = Color::srgb(1.0, 0.92, 0.25);
/// Colour of an envelope intervention flash.
pub(crate) const FLASH_COLOR: Color = Color::srgb(1.0, 0.1, 0.1);

/// Which ghost arms are drawn, indexed by [`Row::index`].
#[derive(Resource, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shown(pub(crate) [bool; 8]);

impl Default for Shown {
    fn default() -> Self {
        let mut shown = [false; 8];
        for row in [Row::ElbowUp, Row::ElbowDown, Row::Average, Row::Mse, Row::Mdn] {
            shown[row.index()] = true;
        }
        Self(shown)
    }
}

impl Shown {
    /// Whether `row`'s ghost is drawn.
    pub(crate) fn get(&self, row: Row) -> bool {
        self.0[row.index()]
    }
}
