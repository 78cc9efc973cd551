//! `usage.cost` from the operator's price table.

use protocol::response::Usage;

use crate::config::Prices;

/// Fills `cost` (when the model has a price) and each tool's `cost_usd` (when the tool has
/// one) from the operator's price table.
pub fn price_usage(usage: &mut Usage, model: &str, prices: &Prices) {
    let mut tools_cost = 0.0;
    let mut any_tool_price = false;
    for (key, details) in &mut usage.tool_calls_details {
        if let Some(price) = prices.tools.get(key) {
            let cost = price * details.invocation as f64;
            details.cost_usd = Some(cost);
            tools_cost += cost;
            any_tool_price = true;
        }
    }
    let Some(price) = prices.models.get(model) else {
        return;
    };
    let per_token = |per_million: f64| per_million / 1_000_000.0;
    let cached = usage
        .input_tokens_details
        .cached_tokens
        .min(usage.input_tokens);
    let written = usage
        .input_tokens_details
        .cache_write_tokens
        .min(usage.input_tokens - cached);
    let input_cost =
        per_token(price.input_per_million) * (usage.input_tokens - cached - written) as f64;
    let cache_read_cost = per_token(
        price
            .cache_read_per_million
            .unwrap_or(price.input_per_million),
    ) * cached as f64;
    let cache_creation_cost = per_token(
        price
            .cache_write_per_million
            .unwrap_or(price.input_per_million),
    ) * written as f64;
    let output_cost = per_token(price.output_per_million) * usage.output_tokens as f64;
    usage.cost = Some(protocol::response::Cost {
        currency: "USD".to_owned(),
        input_cost,
        output_cost,
        cache_creation_cost: Some(cache_creation_cost),
        cache_read_cost: Some(cache_read_cost),
        tool_calls_cost: any_tool_price.then_some(tools_cost),
        total_cost: input_cost + cache_creation_cost + cache_read_cost + output_cost + tools_cost,
        tool_calls_cost_details: None,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelPrice;

    #[test]
    fn usage_is_priced_from_the_table() {
        let mut prices = Prices::default();
        prices.models.insert(
            "openai/gpt-x".to_owned(),
            ModelPrice {
                input_per_million: 2.0,
                output_per_million: 8.0,
                cache_read_per_million: Some(0.5),
                cache_write_per_million: Some(2.5),
            },
        );
        prices.tools.insert("search_web".to_owned(), 0.005);
        let mut usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 500_000,
            ..Usage::default()
        };
        usage.input_tokens_details.cached_tokens = 200_000;
        usage.input_tokens_details.cache_write_tokens = 100_000;
        usage
            .tool_calls_details
            .entry("search_web".to_owned())
            .or_default()
            .invocation = 2;
        usage
            .tool_calls_details
            .entry("fetch_url".to_owned())
            .or_default()
            .invocation = 1;
        price_usage(&mut usage, "openai/gpt-x", &prices);
        let cost = usage.cost.clone().expect("priced");
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // 700k plain input at $2, 200k cache reads at $0.5, 100k cache writes at $2.5.
        assert!(close(cost.input_cost, 1.4), "{cost:?}");
        assert!(close(cost.cache_read_cost.unwrap_or_default(), 0.1));
        assert!(close(cost.cache_creation_cost.unwrap_or_default(), 0.25));
        assert!(close(cost.output_cost, 4.0));
        assert!(close(cost.tool_calls_cost.unwrap_or_default(), 0.01));
        assert!(close(cost.total_cost, 5.76));
        assert_eq!(usage.tool_calls_details["search_web"].cost_usd, Some(0.01));
        assert_eq!(usage.tool_calls_details["fetch_url"].cost_usd, None);
        let mut unpriced = Usage::default();
        price_usage(&mut unpriced, "openai/other", &prices);
        assert!(unpriced.cost.is_none());
    }
}
