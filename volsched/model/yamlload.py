"""Bounded YAML loading for input a user hands us (simulator files, the scheduler config).

Safe tags only (``SafeConstructor``), with libyaml's C parser when PyYAML was built with it (falling
back to the pure-Python parser), and two bounds a hostile file would otherwise break:

* nesting deeper than :data:`MAX_DEPTH` is refused while composing (PyYAML's composers recurse: the
  pure-Python one raises RecursionError, libyaml's overflows the C stack and kills the process); the
  libyaml of PyYAML 6.0.4 on refuses 1,000 levels itself, in a scanner that reads ahead of the events,
  so a document it stops in is read again with the pure-Python parser and the refusal is this one, at
  the same place, whichever PyYAML is installed;
* the aliases of one load may not stand for more than :data:`ALIAS_BUDGET` nodes in all (a "billion
  laughs" bomb is a few lines that expand to millions of nodes as soon as anything walks them), and an
  alias may not refer to a node that contains it (PyYAML would build a cyclic object).

Bytes must be UTF-8. Every error is an :class:`InputError` naming the source, the document and the
line. Pure parsing: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import SafeConstructor
from yaml.events import (
    AliasEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser as _PyParser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from volsched.gcpause import pause_collector, resume_collector
from volsched.model.errors import InputError

#: Deepest nesting of maps and lists accepted (a Pod template in a List is about 15 deep).
MAX_DEPTH = 100
#: How many nodes aliases may stand for in one load (each alias counts the nodes it repeats).
ALIAS_BUDGET = 1_000_000

#: A line that starts a new document after the first (``---``, possibly followed by content).
_DOCUMENT_START = re.compile(rb"(?<=.)^---(?=[ \t\r\n]|$)", re.MULTILINE | re.DOTALL)

try:  # libyaml's parser; composing and constructing stay in Python so the bounds can be enforced
    from yaml._yaml import CParser as _CParser  # type: ignore[import-not-found,unused-ignore]

    C_PARSER = True
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    C_PARSER = False


class _BoundedComposer:
    """An iterative composer with the bounds above, over any PyYAML parser (the class it is mixed into).

    It builds the same nodes as PyYAML's ``Composer`` (which recurses, and whose C twin in the C parser
    cannot be bounded), without path resolvers (the safe loader has none)."""

    check_event: Any
    get_event: Any
    resolve: Any

    def _init_composer(self) -> None:
        self.anchors: dict[str, Node] = {}
        self._open: set[str] = set()  # anchors of collections still being composed
        self._sizes: dict[int, int] = {}  # id(node) -> nodes it stands for, aliases expanded
        self.expanded = 0  # nodes aliases stood for so far in this load
        self._scalar_tags: dict[tuple[str, Any], str] = {}  # (plain value, implicit) -> resolved tag
        self.done: Any = None  # where the last complete document ended (a Mark), None before the first

    def check_node(self) -> bool:
        if self.check_event(StreamStartEvent):
            self.get_event()
        return not self.check_event(StreamEndEvent)

    def get_node(self) -> Node:
        self.get_event()  # DocumentStartEvent
        node = self._compose()
        self.done = self.get_event().end_mark  # DocumentEndEvent
        self.anchors, self._sizes = {}, {}
        return node

    def _anchor(self, event: Any, node: Node) -> None:
        if event.anchor in self.anchors:
            raise ComposerError(
                f"found duplicate anchor {event.anchor!r}; first occurrence",
                self.anchors[event.anchor].start_mark,
                "second occurrence",
                event.start_mark,
            )
        self.anchors[event.anchor] = node

    def _compose(self) -> Node:
        stack: list[list[Any]] = []  # [collection node, pending mapping key or None, anchor]
        get_event, resolve, tags = self.get_event, self.resolve, self._scalar_tags
        while True:
            event: Any = get_event()
            cls = type(event)
            node: Node
            if cls is ScalarEvent:
                tag = event.tag
                value = event.value
                if tag is None or tag == "!":
                    # The safe resolver has no path resolvers: the tag depends on these two alone.
                    key = (value, event.implicit)
                    tag = tags.get(key)
                    if tag is None:
                        if len(tags) > 100_000:
                            tags.clear()
                        tag = tags[key] = resolve(ScalarNode, value, event.implicit)
                node = ScalarNode(tag, value, event.start_mark, event.end_mark, event.style)
                if event.anchor is not None:
                    self._anchor(event, node)
            elif cls is AliasEvent:
                node = self._alias(event)
            elif cls is SequenceStartEvent or cls is MappingStartEvent:
                if len(stack) >= MAX_DEPTH:
                    raise ComposerError(
                        None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark
                    )
                kind = SequenceNode if cls is SequenceStartEvent else MappingNode
                tag = event.tag
                if tag is None or tag == "!":
                    tag = resolve(kind, None, event.implicit)
                node = kind(tag, [], event.start_mark, None, event.flow_style)
                if event.anchor is not None:
                    self._anchor(event, node)
                    self._open.add(event.anchor)
                stack.append([node, None, event.anchor])
                continue
            else:  # SequenceEndEvent, MappingEndEvent
                node, _, anchor = stack.pop()
                node.end_mark = event.end_mark
                if anchor is not None:
                    self._open.discard(anchor)
            if not stack:
                return node
            top = stack[-1]
            if top[0].id == "sequence":
                top[0].value.append(node)
            elif top[1] is None:
                top[1] = node
            else:
                top[0].value.append((top[1], node))
                top[1] = None

    def _alias(self, event: Any) -> Node:
        target = self.anchors.get(event.anchor)
        if target is None:
            raise ComposerError(None, None, f"found undefined alias {event.anchor!r}", event.start_mark)
        if event.anchor in self._open:
            raise ComposerError(
                None, None, f"alias *{event.anchor} refers to a node that contains it", event.start_mark
            )
        self.expanded += self._size(target)
        if self.expanded > ALIAS_BUDGET:
            raise ComposerError(
                None,
                None,
                f"aliases expand to more than {ALIAS_BUDGET} nodes (a YAML bomb?)",
                event.start_mark,
            )
        return target

    def _size(self, root: Node) -> int:
        """Nodes ``root`` stands for with its aliases expanded (memoised; a complete node has no cycle)."""
        sizes = self._sizes
        todo: list[tuple[Node, bool]] = [(root, False)]
        while todo:
            node, ready = todo.pop()
            if id(node) in sizes:
                continue
            if type(node) is ScalarNode:
                sizes[id(node)] = 1
                continue
            children = node.value if type(node) is SequenceNode else [n for kv in node.value for n in kv]
            if ready:
                sizes[id(node)] = min(1 + sum(sizes[id(c)] for c in children), ALIAS_BUDGET + 1)
            else:
                todo.append((node, True))
                todo.extend((c, False) for c in children if id(c) not in sizes)
        return sizes[id(root)]


class _PyLoader(_BoundedComposer, Reader, Scanner, _PyParser, SafeConstructor, Resolver):
    """PyYAML's pure-Python parser under the bounded composer: no nesting limit of its own."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        _PyParser.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._init_composer()


_Loader: Any
if C_PARSER:

    class _CLoader(_BoundedComposer, _CParser, SafeConstructor, Resolver):
        """libyaml's parser under the bounded composer (several times faster than Python's)."""

        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self._init_composer()

    _Loader = _CLoader
else:  # pragma: no cover - PyYAML built without libyaml
    _Loader = _PyLoader


def _library_nesting_limit(exc: yaml.YAMLError) -> bool:
    """Whether ``exc`` is libyaml's own nesting limit (0.2.5's, in PyYAML 6.0.4's wheels: 1,000 levels,
    reached while its scanner reads ahead, before the composer sees the events)."""
    return C_PARSER and "nesting depth" in str(getattr(exc, "problem", None) or "")


def decode_utf8(data: bytes, *, source: str) -> str:
    """``data`` as text; a byte that is not UTF-8 is an error naming its line and offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        document = len(_DOCUMENT_START.findall(data, 0, exc.start)) + 1
        raise InputError(
            f"not UTF-8: byte 0x{data[exc.start]:02x} at line {line} (offset {exc.start})",
            source=f"{source}: document {document}",
        ) from None


def _yaml_error(exc: yaml.YAMLError, *, source: str, document: int, first_line: int = 0) -> InputError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f" at line {first_line + mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return InputError(f"not valid YAML{where}: {problem}", source=f"{source}: document {document}")


def _load_into(docs: list[tuple[Any, Node]], loader: Any) -> None:
    while loader.check_node():
        node = loader.get_node()
        docs.append((loader.construct_document(node), node))


def load_all(data: str | bytes, *, source: str) -> list[Any]:
    """Every document of a YAML stream (``None`` for an empty one), within the bounds above."""
    return [doc for doc, _ in load_all_nodes(data, source=source)]


def load_all_nodes(data: str | bytes, *, source: str) -> list[tuple[Any, Node]]:
    """Every document of a YAML stream with the node it was built from (where each field stands in the
    text: see :func:`line_of`), within the bounds above.

    libyaml's own nesting limit (PyYAML 6.0.4 on) fires where its scanner reads ahead, beyond this
    module's :data:`MAX_DEPTH`: the document it stops in is read again by the pure-Python parser, which
    has none, so the error is this module's, at the same place, whichever PyYAML is installed."""
    text = decode_utf8(data, source=source) if isinstance(data, bytes) else data
    docs: list[tuple[Any, Node]] = []
    loader: Any = _Loader(text)
    first_line = 0  # of the text the loader reads
    # Loading allocates millions of objects and frees none (nor makes cycles: recursive aliases are
    # refused), so the cyclic collector would only rescan the growing heap: a third of the time.
    pause_collector()
    try:
        try:
            _load_into(docs, loader)
        except yaml.YAMLError as exc:
            rest = _after_last_document(text, loader.done) if _library_nesting_limit(exc) else None
            if rest is None:
                raise
            first_line, offset = rest
            loader.dispose()
            expanded, loader = loader.expanded, _PyLoader(text[offset:])
            loader.expanded = expanded
            _load_into(docs, loader)
            raise exc from None  # pragma: no cover - the Python parser read past libyaml's limit
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, source=source, document=len(docs) + 1, first_line=first_line) from None
    except (RecursionError, MemoryError, OverflowError, ValueError) as exc:  # belt and braces
        detail = str(exc)[:200] or type(exc).__name__
        raise InputError(f"cannot load: {detail}", source=f"{source}: document {len(docs) + 1}") from None
    finally:
        loader.dispose()
        resume_collector()
    return docs


_LINE_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")


def _after_last_document(text: str, done: Any) -> tuple[int, int] | None:
    """(line, offset) of the first line after the last complete document (0, 0 before the first), from
    libyaml's mark of its end: the start of the next document's line, or past the end of a ``...``
    line. None when the mark does not fit ``text``."""
    if done is None:
        return 0, 0
    offset, line = done.index + (1 if text.startswith("\ufeff") else 0), done.line
    if done.column:  # after "...": what follows on its line is a comment at most
        found = _LINE_BREAK.search(text, offset)
        if found is None:
            return None
        offset, line = found.end(), line + 1
    if not 0 < offset <= len(text) or text[offset - 1] not in "\n\r\x85\u2028\u2029":
        return None
    return line, offset


def line_of(node: Node, path: Sequence[str | int]) -> int | None:
    """The line (1-based) of the field at ``path`` (map keys and list indexes) in a composed document:
    the line of its key, or of the deepest part of the path that is there; None for none of it."""
    line: int | None = None
    for part in path:
        if isinstance(node, MappingNode):
            for key, value in node.value:
                if isinstance(key, ScalarNode) and key.value == str(part):
                    line, node = key.start_mark.line + 1, value
                    break
            else:
                return line
        elif isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def load_one(data: str | bytes, *, source: str) -> Any:
    """The single document of a YAML stream (``None`` when empty); more than one is an error."""
    docs = load_all(data, source=source)
    if len(docs) > 1:
        raise InputError(f"expected one YAML document, found {len(docs)}", source=source)
    return docs[0] if docs else None
