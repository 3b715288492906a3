//! Line charts as SVG files (plotters' SVG backend; no fonts needed).

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use std::path::Path;

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Index into the palette.
    pub color: usize,
    /// `(x, y)` points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// What a chart shows besides its lines.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// A logarithmic x axis (base 2), ticks labelled as integers.
    pub log_x: bool,
    /// A vertical marker at `x`, with its legend label.
    pub marker: Option<(f64, String)>,
    /// A line of text under the chart (what ran, where and when).
    pub caption: String,
}

const PALETTE: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

const MARKER: RGBColor = RGBColor(120, 120, 120);

/// Draws `series` as lines with points against a shared x axis and writes an SVG to `path`.
pub fn line_chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<(), String> {
    line_chart_with(path, title, x_label, y_label, series, &Extras::default())
}

/// [`line_chart`] with a log-scale x axis, a marker and a caption as `extras` says.
pub fn line_chart_with(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    extras: &Extras,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("chart {}: {e}", path.display());
    let all = series.iter().flat_map(|s| s.points.iter());
    let (mut x_max, mut y_max) = (1.0f64, 0.0f64);
    let mut x_min = f64::INFINITY;
    for &(x, y) in all {
        x_min = x_min.min(x);
        x_max = x_max.max(x);
        if y.is_finite() {
            y_max = y_max.max(y);
        }
    }
    if !x_min.is_finite() || x_min >= x_max {
        x_min = if extras.log_x { 1.0 } else { 0.0 };
    }
    if extras.log_x {
        x_min = x_min.max(f64::MIN_POSITIVE);
    }
    let y_max = if y_max <= 0.0 { 1.0 } else { y_max * 1.08 };
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (plot, foot) = root.split_vertically(528);
    if !extras.caption.is_empty() {
        foot.draw(&Text::new(
            extras.caption.clone(),
            (16, 6),
            ("sans-serif", 13).into_font().color(&BLACK.mix(0.75)),
        ))
        .map_err(|e| err(&e))?;
    }
    if extras.log_x {
        let x = (x_min..x_max).log_scale().base(2.0);
        draw(&plot, x, x_label, y_label, title, y_max, series, extras).map_err(|e| err(&e))?;
    } else {
        draw(
            &plot,
            x_min..x_max,
            x_label,
            y_label,
            title,
            y_max,
            series,
            extras,
        )
        .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type DrawResult<'a> =
    Result<(), DrawingAreaErrorKind<<SVGBackend<'a> as DrawingBackend>::ErrorType>>;

#[allow(clippy::too_many_arguments)]
fn draw<'a, X>(
    area: &Area<'a>,
    x: X,
    x_label: &str,
    y_label: &str,
    title: &str,
    y_max: f64,
    series: &[Series],
    extras: &Extras,
) -> DrawResult<'a>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x, 0.0..y_max)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .x_label_formatter(&|v| format!("{}", v.round() as i64))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    if let Some((at, label)) = &extras.marker {
        let at = *at;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(at, 0.0), (at, y_max)],
                MARKER.stroke_width(2),
            )))?
            .label(label.clone())
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], MARKER.stroke_width(2)));
    }
    for s in series {
        let color = PALETTE[s.color % PALETTE.len()];
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|(_, y)| y.is_finite())
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
