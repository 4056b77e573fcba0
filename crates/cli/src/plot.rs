//! The throughput plot: per-path throughput at the confluence point and per-flow goodput over
//! time, like Figs. 10 and 11 of Motohashi et al.

use mpsched_sim::TimeSeries;
use plotters::prelude::*;
use std::path::Path;

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// Draw `series` into a PNG at `out`: top panel the `*_mbps` columns of `paths`, bottom panel
/// those of `flows`.
pub fn throughput_png(
    series: &TimeSeries,
    title: &str,
    paths: &[String],
    flows: &[String],
    out: &Path,
) -> anyhow::Result<()> {
    let root = BitMapBackend::new(out, (1100, 760)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(380);
    let t = series.values("time_s").unwrap_or_default();
    let t_max = t.last().copied().unwrap_or(1.0).max(1.0);
    panel(
        &top,
        &format!("{title}: throughput per path (wire, into the confluence point)"),
        &t,
        t_max,
        series,
        paths,
    )?;
    panel(
        &bottom,
        "goodput per flow (UDP payload at the receiver)",
        &t,
        t_max,
        series,
        flows,
    )?;
    root.present()?;
    Ok(())
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    t: &[f64],
    t_max: f64,
    series: &TimeSeries,
    names: &[String],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let cols: Vec<(String, Vec<f64>)> = names
        .iter()
        .filter_map(|n| series.values(&format!("{n}_mbps")).map(|v| (n.clone(), v)))
        .collect();
    let y_max = cols.iter().flat_map(|(_, v)| v.iter().copied()).fold(1.0f64, f64::max) * 1.15;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..t_max, 0.0..y_max)?;
    chart.configure_mesh().x_desc("time (s)").y_desc("Mbit/s").draw()?;
    for (i, (name, v)) in cols.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                t.iter().copied().zip(v.iter().copied()),
                c.stroke_width(2),
            ))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    Ok(())
}
