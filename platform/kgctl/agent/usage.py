"""What model requests cost: token counts per request and list prices.

>>> Usage(prompt_tokens=1000, completion_tokens=500).cost(Price(input=2.5, output=10.0))
0.0075
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

TOKENS_PER_PRICE_UNIT = 1_000_000


class Price(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    input: float = Field(ge=0)
    output: float = Field(ge=0)


# Published list prices (USD per 1M tokens); override or extend with a price file.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o": Price(input=2.5, output=10.0),
    "gpt-4o-mini": Price(input=0.15, output=0.6),
    "gpt-4.1": Price(input=2.0, output=8.0),
    "gpt-4.1-mini": Price(input=0.4, output=1.6),
}


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    requests: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0  # None when the model has no price

    def __add__(self, other: Usage) -> Usage:
        cost = None if None in (self.cost_usd, other.cost_usd) else self.cost_usd + other.cost_usd
        return Usage(
            requests=self.requests + other.requests,
            retries=self.retries + other.retries,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=None if cost is None else round(cost, 8),
        )

    def cost(self, price: Price | None) -> float | None:
        if price is None:
            return None
        return round(
            (self.prompt_tokens * price.input + self.completion_tokens * price.output)
            / TOKENS_PER_PRICE_UNIT,
            8,
        )
