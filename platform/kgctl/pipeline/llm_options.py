"""The options every command that talks to an LLM shares, and the settings they give.

>>> tool_server_option(None, None, ("chemistry=off",))
{'chemistry': 'off'}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import yaml
from pydantic import ValidationError

from kgctl.agent.llm import DEFAULT_MAX_RETRIES, DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S, LLMSettings
from kgctl.agent.loop import DEFAULT_MAX_ITERATIONS
from kgctl.agent.search import DEFAULT_LAMBDA
from kgctl.agent.usage import Price
from kgctl.errors import InputError

DEFAULT_RUNS = Path("kgctl-data") / "runs"


def tool_server_option(_ctx: click.Context, _param: click.Parameter,
                        values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for value in values:
        name, sep, url = value.partition("=")
        if not sep or not name.strip() or not url.strip():
            raise click.BadParameter(f"{value!r}: expected NAME=URL or NAME=off")
        out[name.strip()] = url.strip()
    return out


def llm_options(func):
    """Options shared by every command that talks to an LLM."""
    options = [
        click.option("--base-url", help="OpenAI-compatible server URL (env OPENAI_BASE_URL); "
                     "key in env OPENAI_API_KEY."),
        click.option("--model", help="model name (env KGCTL_MODEL)."),
        click.option("--temperature", type=float, default=0.0, show_default=True),
        click.option("--max-iterations", type=click.IntRange(1), show_default=True,
                     default=DEFAULT_MAX_ITERATIONS, help="model turns per plan step."),
        click.option("--max-retries", type=click.IntRange(0), default=DEFAULT_MAX_RETRIES,
                     show_default=True, help="retries of a failing LLM request (429/5xx/timeout)."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True),
                     default=DEFAULT_TIMEOUT_S, show_default=True, help="seconds per request."),
        click.option("--max-tokens", type=click.IntRange(1), default=DEFAULT_MAX_TOKENS,
                     show_default=True, help="reply budget of each model turn."),
        click.option("--context-window", type=click.IntRange(1), default=None,
                     help="the model's context window in tokens (default: asked from the "
                          "server); the paper is shown in pieces that fit."),
        click.option("-v", "--verbose", is_flag=True, help="log every HTTP request."),
        click.option("--prices", type=click.Path(path_type=Path), help="price table (YAML/JSON: "
                     "model: {input: USD per 1M tokens, output: ...})."),
        click.option("--workers", type=click.IntRange(1), default=2, show_default=True,
                     help="papers extracted in parallel."),
        click.option("--plan-hints", type=click.Path(path_type=Path),
                     help="YAML with extra section-title words to read per plan step."),
        click.option("--tool-server", "tool_servers", multiple=True, metavar="NAME=URL",
                     callback=tool_server_option,
                     help="reach the external tool server NAME of the ontology's profiles "
                          "(e.g. chemistry) at URL (streamable HTTP) instead of starting it; "
                          "NAME=off runs without it (repeatable)."),
        click.option("--lambda", "lam", type=click.FloatRange(0, 1), default=DEFAULT_LAMBDA,
                     show_default=True, help="MMR trade-off of evidence search (1 = relevance)."),
        click.option("--no-feedback", is_flag=True, help="ablation: tools write whatever they "
                     "are given, without constraint feedback."),
        click.option("--runs", "out", type=click.Path(path_type=Path), default=None,
                     help=f"folder of run traces (default {DEFAULT_RUNS})."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def llm_settings(llm: dict[str, Any]) -> LLMSettings:
    """The settings the LLM options (and the environment) give."""
    prices = dict(LLMSettings.model_fields["prices"].default_factory())
    if llm["prices"]:
        prices.update(read_prices(llm["prices"]))
    return LLMSettings.from_env(
        base_url=llm["base_url"], model=llm["model"], temperature=llm["temperature"],
        timeout_s=llm["timeout"], max_retries=llm["max_retries"], prices=prices,
        max_tokens=llm["max_tokens"], context_window=llm["context_window"])


def read_prices(path: Path) -> dict[str, Price]:
    """A price table file: model -> USD per 1M input and output tokens."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return {str(model): Price.model_validate(p) for model, p in data.items()}
    except OSError as exc:
        raise InputError(f"cannot read price table {path}: {exc.strerror}") from None
    except (yaml.YAMLError, ValidationError, AttributeError) as exc:
        raise InputError(f"{path}: not a price table ({str(exc).splitlines()[0]}); expected "
                         "model: {input: USD per 1M tokens, output: USD per 1M tokens}") from None
