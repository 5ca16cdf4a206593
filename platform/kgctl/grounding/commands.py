"""``kgctl ground``: the grounding CLI."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import click

from kgctl.errors import InputError, StoreError
from kgctl.grounding.harvest import harvest_index, last_good_index
from kgctl.grounding.inspect import propose_spec
from kgctl.grounding.matcher import Matcher
from kgctl.grounding.paths import default_reference
from kgctl.grounding.sources import open_source
from kgctl.grounding.spec import GroundingSpec, spec_for_class
from kgctl.packs import domain_option, load_pack
from kgctl.progress import progress_bar
from kgctl.toolserver.transport import serve as run_server
from kgctl.toolserver.transport import transport_options

MODES = ("sameas", "rewrite")
MCP_PORT = 8767


def load_matcher(class_name: str | None, *, endpoint: str | None, reference: Path | None,
                 cache_dir: Path | None, refresh: bool, domain: str | None = None
                 ) -> tuple[Matcher, GroundingSpec]:
    """Harvest (or load from cache) the index of the class; keep the last good cache."""
    spec = spec_for_class(class_name, domain=domain)
    if endpoint is None and reference is None:
        reference = default_reference()
    source_name = endpoint or f"store:{Path(reference).resolve()}"
    try:
        source = open_source(endpoint=endpoint, store=reference)
        with ProgressBar("harvest", None) as advance:
            index = harvest_index(source, spec, cache_dir=cache_dir, refresh=refresh,
                                  progress=lambda rows, subjects: advance(subjects))
    except StoreError as exc:
        previous = None if refresh else last_good_index(source_name, spec, cache_dir=cache_dir)
        if previous is None:
            raise StoreError(f"{exc} (the last good cache, if any, is kept)") from exc
        click.echo(f"warning: {exc}; using the last good cache", err=True)
        index = previous
    return Matcher(index, spec.thresholds), spec


def _source_options(command):
    for option in reversed([
        click.option("--class", "class_name", default=None,
                     help="Target class (its spec in the domain pack's grounding/; default: "
                          "the pack's only or first spec)."),
        domain_option,
        click.option("--reference-endpoint", "endpoint", metavar="URL",
                     help="SPARQL endpoint URL of the reference KG (instead of --reference)."),
        click.option("--reference", type=click.Path(path_type=Path),
                     help="Embedded reference store (default: $KGCTL_REFERENCE)."),
        click.option("--cache-dir", type=click.Path(path_type=Path),
                     help="Index cache folder (default: $KGCTL_CACHE/grounding)."),
        click.option("--refresh", is_flag=True, help="Harvest again even if the cache is current."),
    ]):
        command = option(command)
    return command


@click.group(invoke_without_command=True)
@_source_options
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="The kgctl store holding the paper graphs.")
@click.option("--endpoint", "store_endpoint", metavar="URL",
              help="SPARQL endpoint URL of a remote paper store instead of --store.")
@click.option("--paper", "papers", multiple=True, help="Paper id (repeatable).")
@click.option("--all", "all_papers", is_flag=True, help="Every paper in the store.")
@click.option("--mode", type=click.Choice(MODES), default="sameas", show_default=True)
@click.option("--dry-run", is_flag=True, help="Print the mapping, write nothing.")
@click.option("--structures", is_flag=True,
              help="Also parse names to structures with the domain pack's 'structures' hook "
                   "(an extension tier; it may need extras, see docs/grounding.md).")
@click.option("--mint", is_flag=True,
              help="With --structures: mint a new reference entity, in the reference store's "
                   "own graph of minted entities, for an entity whose names parse to a "
                   "structure the reference lacks when the hook's evidence agrees.")
@click.option("--json", "as_json", is_flag=True, help="Decisions as JSON.")
@click.pass_context
def command(ctx: click.Context, class_name: str | None, domain: str | None, endpoint: str | None,
            reference: Path | None, cache_dir: Path | None, refresh: bool,
            store_path: Path | None,
            store_endpoint: str | None, papers: tuple[str, ...], all_papers: bool, mode: str,
            dry_run: bool, structures: bool, mint: bool, as_json: bool) -> None:
    """Ground locally minted entities of paper graphs against a reference KG.

    Example: kgctl ground --store kg/ --all --dry-run

    Example: kgctl ground --store kg/ --all --structures

    Example: kgctl ground --reference ref/ --store kg/ --all --structures --mint --dry-run
    """
    ctx.obj = {"class_name": class_name, "domain": domain, "endpoint": endpoint,
               "reference": reference,
               "cache_dir": cache_dir, "refresh": refresh}
    if ctx.invoked_subcommand is not None:
        return
    from kgctl.grounding.materialise import materialise
    from kgctl.store import open_store
    from kgctl.store.merged import rebuild

    if (store_path is None) == (store_endpoint is None) or not (papers or all_papers):
        raise InputError("give --store PATH or --endpoint URL, and --paper ID or --all "
                         "(see --help)")
    if mint and not structures:
        raise InputError("--mint needs --structures: minted entities are written into the "
                         "reference (--reference, or --reference-endpoint with update rights)")
    store = open_store(path=store_path, endpoint=store_endpoint, create=False)
    try:
        chosen = store.papers() if all_papers else list(papers)
        unknown = [] if all_papers else sorted({p for p in chosen if not store.has_paper(p)})
        if unknown:
            raise InputError(f"unknown paper(s): {', '.join(unknown)}")
        matcher, spec = load_matcher(class_name, endpoint=endpoint, reference=reference,
                                     cache_dir=cache_dir, refresh=refresh, domain=domain)
        with contextlib.ExitStack() as stack:
            tier = minter = None
            if structures:  # the domain pack's extension: names -> structures (and minting)
                hook = load_pack(domain).hook("structures")
                if hook is None:
                    raise InputError("--structures: the domain pack names no 'structures' "
                                     "hook")
                tier, minter = hook(stack, matcher, endpoint=endpoint, mint=mint,
                                    reference=None if endpoint else
                                    reference or default_reference(), dry_run=dry_run)
            decisions = materialise(store, matcher, spec, chosen, mode=mode, dry_run=dry_run,
                                    structures=tier, mint=minter.mint if minter else None)
        if not dry_run:
            rebuild(store, chosen)  # the merged view follows the new links
    finally:
        store.close()
    if minter is not None:
        proposed = {d.match.iri for d in decisions if d.match and d.match.method == "minted"}
        click.echo(f"{len(proposed)} {spec.name} would be minted (dry run: nothing written)"
                   if dry_run else f"{len(minter.written)} {spec.name} newly minted", err=True)
    if as_json:
        click.echo(json.dumps([d.model_dump(mode="json", exclude={"results"})
                               for d in decisions], indent=2))
        return
    rows = [(d.paper, d.names[0] if d.names else d.entity,
             d.match.label if d.match else "-", d.match.method if d.match else "no match",
             f"{d.match.score:.1f}" if d.match else "",
             ("written" if d.written else "dry run" if dry_run else "unchanged") if d.match
             else "") for d in decisions]
    _table(("paper", "name", f"reference {spec.name}", "method", "score", "state"), rows)
    grounded = sum(d.match is not None for d in decisions)
    click.echo(f"{grounded}/{len(decisions)} entities grounded", err=True)


@command.command()
@click.argument("names", nargs=-1, required=True)
@click.option("-k", "k", type=click.IntRange(1, 100), default=None,
              help="Candidates per name (default: the spec's).")
@click.option("--json", "as_json", is_flag=True, help="Results as JSON.")
@click.pass_obj
def lookup(obj: dict, names: tuple[str, ...], k: int | None, as_json: bool) -> None:
    """Print the accepted match and ranked candidates of each NAME.

    Example: kgctl ground lookup methanol "copper(II) chloride" --json
    """
    matcher, spec = load_matcher(**obj)
    results = [matcher.lookup(name, k=k) for name in names]
    if as_json:
        click.echo(json.dumps([r.model_dump(mode="json") for r in results], indent=2))
        return
    for r in results:
        match = (f"{r.match.label}  {r.match.iri}  ({r.match.method} {r.match.score:.1f})"
                 if r.match else "no match")
        click.echo(f"{r.name}: {match} [{r.reason}]")
        if r.candidates:
            _table(("score", "method", "agrees", spec.name, "matched text", "iri"),
                   [(f"{c.score:.1f}", c.method, "yes" if c.agrees else "no", c.label,
                     c.matched, c.iri) for c in r.candidates], indent=4)
    click.echo("candidates are ranked by method, then whether the protected parts (numbers, "
               "and what the domain's naming adds) agree with the name, then score", err=True)


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]], *, indent: int = 0) -> None:
    """Plain aligned columns, the last one (often an IRI) left unpadded."""
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, strict=True)]
    for row in (header, *rows):
        cells = [str(x).ljust(w) for x, w in zip(row[:-1], widths, strict=False)]
        click.echo(" " * indent + "  ".join([*cells, str(row[-1])]).rstrip())


@command.command()
@click.option("--limit", type=click.IntRange(1, 100000), default=1000, show_default=True,
              help="Instances sampled.")
@click.option("--json", "as_json", is_flag=True, help="Findings as JSON instead of YAML.")
@click.pass_obj
def inspect(obj: dict, limit: int, as_json: bool) -> None:
    """Propose a grounding spec from the endpoint's own evidence for --class (an IRI or a
    known class name): label-like and identifier-like predicates with counts and examples.

    Example: kgctl ground --reference-endpoint http://127.0.0.1:7879/query inspect
    """
    import yaml

    reference = obj["reference"] if obj["endpoint"] else (obj["reference"] or default_reference())
    source = open_source(endpoint=obj["endpoint"], store=reference)
    cls = obj["class_name"]
    if cls is not None and "://" in cls:
        target, naming = cls, load_pack(obj["domain"]).manifest.hooks.get("naming")
    else:
        spec = spec_for_class(cls, domain=obj["domain"])
        target, naming = spec.target_class, spec.naming
    proposal = propose_spec(source, target, limit=limit, naming=naming)
    click.echo(json.dumps(proposal, indent=2) if as_json
               else yaml.safe_dump(proposal, sort_keys=False, allow_unicode=True))


@command.command()
@transport_options(MCP_PORT)
@click.pass_obj
def mcp(obj: dict, transport: str, host: str, port: int, session_idle: float) -> None:
    """Serve lookup / lookup_identifier / describe tools named after the spec (e.g.
    lookup_<spec name>) over MCP; the index loads in the background, so clients connect at
    once (docs/mcp.md).

    Example: kgctl ground --reference ref/ mcp --transport http
    """
    from kgctl.grounding.mcp_server import build_server

    # an unknown class fails here, before serving
    spec = spec_for_class(obj["class_name"], domain=obj["domain"])
    if obj["endpoint"] is None and not Path(obj["reference"] or default_reference()).is_dir():
        raise InputError(f"no reference store at {obj['reference'] or default_reference()}; "
                         "run `kgctl reference build`")
    server = build_server(lambda: load_matcher(**obj)[0], entity=spec.name,
                          kinds=tuple(dict.fromkeys(f.kind for f in spec.identifiers)))
    run_server(server, transport=transport, host=host, port=port, session_idle=session_idle)


class ProgressBar:
    """A rich progress bar on stderr whose `advance(n)` sets or adds completed units."""

    def __init__(self, what: str, total: int | None) -> None:
        self.bar = progress_bar()
        self.task = self.bar.add_task(what, total=total)

    def __enter__(self):
        self.bar.start()
        return lambda n: self.bar.update(self.task, advance=n) if n == 1 else \
            self.bar.update(self.task, completed=n)

    def __exit__(self, *exc) -> None:
        self.bar.stop()
