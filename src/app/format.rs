//! How the app shows things: numbers (never NaN or inf on screen: "—" instead), colours (one per
//! solver, decided by an exhaustive match so a new head cannot go without one), and swatches.

use bevy::prelude::*;
use bevy_egui::egui;
use elbow::{HeadKind, SolverId};

/// Colour of the plant (the real arm).
pub(crate) const PLANT_COLOR: Color = Color::srgb(0.86, 0.87, 0.92);
/// Colour of the target.
pub(crate) const TARGET_COLOR: Color = Color::srgb(1.0, 0.92, 0.25);
/// Colour of the knob the open lesson is about.
pub(crate) const LESSON_COLOR: Color = Color::srgb(1.0, 0.8, 0.2);

/// Colour of the branch-change mark.
pub(crate) const BRANCH_COLOR: Color = Color::srgb(1.0, 0.55, 0.1);

/// Colour of an envelope intervention flash.
pub(crate) const FLASH_COLOR: Color = Color::srgb(1.0, 0.1, 0.1);

/// The colour of a solver's ghost arm (a chain's arms and fan), legend swatch and plot line, on
/// every arm.
pub(crate) fn solver_color(id: SolverId) -> Color {
    match id {
        SolverId::Analytic => Color::srgb(0.62, 0.66, 0.75),
        SolverId::ElbowUp => Color::srgb(0.25, 0.72, 1.0),
        SolverId::ElbowDown => Color::srgb(0.3, 0.9, 0.45),
        SolverId::Average => Color::srgb(1.0, 0.62, 0.1),
        SolverId::Iterative => Color::srgb(0.85, 0.82, 0.55),
        SolverId::Learned(head) => match head {
            HeadKind::Mse => Color::srgb(1.0, 0.22, 0.3),
            HeadKind::Mdn => Color::srgb(0.78, 0.45, 1.0),
            HeadKind::Mode => Color::srgb(1.0, 0.5, 0.82),
            HeadKind::Residual => Color::srgb(0.3, 0.95, 0.9),
        },
        SolverId::Flow => Color::srgb(1.0, 0.62, 0.2),
        // The residual hybrid's teal, darker: the chains' hybrid.
        SolverId::Hybrid => Color::srgb(0.2, 0.8, 0.75),
        SolverId::Exact => Color::srgb(0.45, 0.95, 0.35),
    }
}

/// A colour bar 180 pixels wide between two labels, its colour at `t` in [0, 1] from `color`
/// (an atlas layer's scale).
pub(crate) fn key_bar(ui: &mut egui::Ui, lo: &str, hi: &str, color: impl Fn(f64) -> [u8; 4]) {
    ui.horizontal(|ui| {
        ui.small(lo);
        let (rect, _) = ui.allocate_exact_size(egui::vec2(180.0, 12.0), egui::Sense::hover());
        let steps = 48;
        for i in 0..steps {
            let t0 = i as f32 / steps as f32;
            let r = egui::Rect::from_min_max(
                egui::pos2(rect.left() + t0 * rect.width(), rect.top()),
                egui::pos2(rect.left() + (t0 + 1.0 / steps as f32) * rect.width() + 0.5, rect.bottom()),
            );
            let [red, g, b, a] = color(f64::from(t0));
            ui.painter().rect_filled(r, 0.0, egui::Color32::from_rgba_unmultiplied(red, g, b, a));
        }
        ui.small(hi);
    });
}

/// `v` if finite.
pub(crate) fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// A length for display: millimetres below a metre, "—" when not finite.
pub(crate) fn metres(v: Option<f64>) -> String {
    match v.and_then(finite) {
        Some(x) if x.abs() < 1.0 => format!("{:.1} mm", x * 1e3),
        Some(x) => format!("{x:.3} m"),
        None => "—".into(),
    }
}

/// A number with `decimals` decimals, "—" when not finite.
pub(crate) fn number(v: Option<f64>, decimals: usize) -> String {
    match v.and_then(finite) {
        Some(x) => format!("{x:.decimals$}"),
        None => "—".into(),
    }
}

/// An egui colour from a bevy one.
pub(crate) fn color32(c: Color) -> egui::Color32 {
    let s = c.to_srgba();
    let byte = |x: f32| (x.clamp(0.0, 1.0) * 255.0).round() as u8;
    egui::Color32::from_rgba_unmultiplied(byte(s.red), byte(s.green), byte(s.blue), byte(s.alpha))
}

/// A small filled square of `color`.
pub(crate) fn swatch(ui: &mut egui::Ui, color: Color) {
    let (rect, _) = ui.allocate_exact_size(egui::vec2(14.0, 14.0), egui::Sense::hover());
    ui.painter().rect_filled(rect, 3.0, color32(color));
}

/// "training" and a pill of `progress` (steps done, steps in all, whether a run is running, as
/// [`super::state::train::progress`] counts them), saying `what` trains while one runs, `idle`
/// otherwise.
pub(crate) fn progress_pill(ui: &mut egui::Ui, progress: (usize, usize, bool), what: &str, idle: &str) {
    let (done, total, running) = progress;
    ui.label("training");
    let fraction = if total > 0 { done as f32 / total as f32 } else { 0.0 };
    let text = format!("{:.0} %{}", 100.0 * fraction, if running { format!(" ({what})") } else { format!(", {idle}") });
    ui.add(egui::ProgressBar::new(fraction).desired_width(150.0).text(text));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_solver_has_its_own_colour() {
        for a in SolverId::ALL {
            for b in SolverId::ALL {
                assert!(a == b || solver_color(a) != solver_color(b), "{a:?} and {b:?} share a colour");
            }
        }
    }

    #[test]
    fn non_finite_numbers_show_a_dash() {
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(metres(Some(v)), "—");
            assert_eq!(number(Some(v), 2), "—");
        }
        assert_eq!(metres(Some(0.0123)), "12.3 mm");
    }
}
