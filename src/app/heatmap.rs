//! The atlas drawn under the arm: a sprite the size of the mapped square, its texture painted
//! from the latest map with the chosen layer's colours (nearest-neighbour, so cells stay
//! crisp). It repaints only when a new map arrives or the layer changes, and hides on a chain
//! and while a replay is open.

use super::AppSet;
use super::atlas::AtlasView;
use super::manifold_atlas::ChainAtlasView;
use super::state::arm::Lab;
use bevy::asset::RenderAssetUsages;
use bevy::image::ImageSampler;
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
use elbow::atlas::paint;

/// Registers the sprite and its repaint.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Startup, spawn).add_systems(Update, (repaint, repaint_chain).in_set(AppSet::Draw));
}

/// The heatmap sprite.
#[derive(Component)]
struct Heatmap;

/// The chain atlas's sprite.
#[derive(Component)]
struct ChainHeatmap;

/// The two-link atlas's sprite, told apart from the chain's.
type TwoLinkSprite = (With<Heatmap>, Without<ChainHeatmap>);
/// The chain atlas's sprite, told apart from the two-link one.
type ChainSprite = (With<ChainHeatmap>, Without<Heatmap>);

/// How opaque the heatmap is, so the arm and the annulus stay readable over it.
const OPACITY: f32 = 0.55;

/// Spawns the (hidden) sprite.
fn spawn(mut commands: Commands) {
    commands.spawn((
        Heatmap,
        Sprite { color: Color::WHITE.with_alpha(OPACITY), ..default() },
        Transform::from_xyz(0.0, 0.0, -10.0),
        Visibility::Hidden,
    ));
    commands.spawn((
        ChainHeatmap,
        Sprite { color: Color::WHITE.with_alpha(OPACITY), ..default() },
        Transform::from_xyz(0.0, 0.0, -10.0),
        Visibility::Hidden,
    ));
}

/// Puts `pixels` (`w` × `h` RGBA) into the sprite's texture, freeing the one it replaces.
fn set_texture(sprite: &mut Sprite, images: &mut Assets<Image>, w: u32, h: u32, pixels: Vec<u8>) {
    let mut image = Image::new(
        Extent3d { width: w, height: h, depth_or_array_layers: 1 },
        TextureDimension::D2,
        pixels,
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::RENDER_WORLD,
    );
    image.sampler = ImageSampler::nearest();
    let old = std::mem::replace(&mut sprite.image, images.add(image));
    // The sprite starts on bevy's shared default image, which others draw with: never remove it.
    if old != Handle::default() {
        images.remove(&old);
    }
}

/// Paints the chain's latest map into its sprite, over the map's rectangle, on a chain only.
fn repaint_chain(
    view: Res<ChainAtlasView>,
    lab: Res<Lab>,
    mut images: ResMut<Assets<Image>>,
    mut sprite: Single<(&mut Sprite, &mut Transform, &mut Visibility), ChainSprite>,
    mut painted: Local<Option<u64>>,
) {
    let (sprite, transform, visibility) = &mut *sprite;
    let map = view.latest.as_ref().filter(|a| view.on && lab.chain().is_some_and(|arm| arm.name == a.arm));
    visibility.set_if_neq(if map.is_some() { Visibility::Inherited } else { Visibility::Hidden });
    let Some(atlas) = map else { return };
    if *painted == Some(view.generation) {
        return;
    }
    *painted = Some(view.generation);
    let n = atlas.resolution as u32;
    let pixels = paint::chain_pixels(atlas);
    if pixels.len() != (n * n * 4) as usize {
        return;
    }
    set_texture(sprite, &mut images, n, n, pixels);
    let e = atlas.extent;
    sprite.custom_size = Some(Vec2::new((e.x[1] - e.x[0]) as f32, (e.y[1] - e.y[0]) as f32));
    transform.translation.x = (0.5 * (e.x[0] + e.x[1])) as f32;
    transform.translation.y = (0.5 * (e.y[0] + e.y[1])) as f32;
}

/// Paints the latest map into the sprite's texture when it or the layer changed.
fn repaint(
    view: Res<AtlasView>,
    lab: Res<Lab>,
    replay: Res<super::replay::ReplayView>,
    mut images: ResMut<Assets<Image>>,
    mut sprite: Single<(&mut Sprite, &mut Visibility), TwoLinkSprite>,
    mut painted: Local<Option<(u64, elbow::atlas::Layer)>>,
) {
    let (sprite, visibility) = &mut *sprite;
    // A map without noise samples has no silent layer: keep showing the old texture until the
    // map with samples arrives, rather than painting every cell as "never silent".
    let silent_pending = |a: &elbow::atlas::Atlas| view.layer == elbow::atlas::Layer::Silent && a.samples == 0;
    // A replay takes the canvas: its scene is drawn on the dark ground.
    let shown = view.on && lab.closed_form().is_some() && replay.open.is_none();
    let map = view.latest.as_ref().filter(|a| shown && a.missing.is_none());
    if map.is_some_and(|a| silent_pending(a)) {
        return;
    }
    let wanted = if map.is_some() { Visibility::Inherited } else { Visibility::Hidden };
    visibility.set_if_neq(wanted);
    let Some(atlas) = map else { return };
    if *painted == Some((view.generation, view.layer)) {
        return;
    }
    *painted = Some((view.generation, view.layer));
    let n = atlas.resolution as u32;
    let pixels = paint::pixels(atlas, view.layer);
    if pixels.len() != (n * n * 4) as usize {
        return;
    }
    set_texture(sprite, &mut images, n, n, pixels);
    let side = 2.0 * atlas.half_width as f32;
    sprite.custom_size = Some(Vec2::splat(side));
}
