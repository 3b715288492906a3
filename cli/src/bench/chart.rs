//! Line charts as SVG files (plotters' SVG backend; no fonts needed).

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

const PALETTE: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

/// Draws `series` as lines with points against a shared x axis and writes an SVG to `path`.
pub fn line_chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
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
        x_min = 0.0;
    }
    let y_max = if y_max <= 0.0 { 1.0 } else { y_max * 1.08 };
    let root = SVGBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x_min..x_max, 0.0..y_max)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(|e| err(&e))?;
    for s in series {
        let color = PALETTE[s.color % PALETTE.len()];
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|(_, y)| y.is_finite())
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
