"""A tiny RAG system behind HTTP, to try ragwatch's HTTP system against (docs/your-system.md).

It answers POST /rag {"question": "..."} with {"answer": "...", "contexts": [{"text", "source",
"score"}]}: the paragraphs of the bundled ZenML docs that share most words with the question are
the contexts, and the best one's first sentence is the answer. No model, standard library only.

    python docs/examples/tiny_rag_server.py [--port 8000] [--corpus data/sample/zenml_docs]
"""

from __future__ import annotations

import argparse
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORD = re.compile(r"[a-z0-9]{4,}")  # words of 4+ characters: a crude stop-word filter


def load_paragraphs(corpus: Path) -> list[tuple[str, str]]:
    """(source, paragraph) for every paragraph of 20+ words in the Markdown files under `corpus`."""
    out = []
    for path in sorted(corpus.rglob("*.md")):
        for block in path.read_text(encoding="utf-8").split("\n\n"):
            if len(block.split()) >= 20:
                out.append((str(path.relative_to(corpus)), " ".join(block.split())))
    return out


def answer(question: str, paragraphs: list[tuple[str, str]], k: int = 2) -> dict:
    words = set(WORD.findall(question.lower()))
    # shared words, per square root of the paragraph's length: long paragraphs do not win by size
    scored = sorted(((len(words & set(WORD.findall(text.lower()))) / len(text.split()) ** 0.5, source, text)
                     for source, text in paragraphs), reverse=True)[:k]
    contexts = [{"text": text, "source": source, "score": round(score, 3)} for score, source, text in scored]
    best = contexts[0]["text"] if contexts else ""
    return {"answer": re.split(r"(?<=[.!?])\s", best, maxsplit=1)[0], "contexts": contexts}


def make_server(port: int, corpus: Path) -> ThreadingHTTPServer:
    paragraphs = load_paragraphs(corpus)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                reply, status = answer(str(body["question"]), paragraphs), 200
            except (ValueError, KeyError, TypeError) as exc:
                reply, status = {"error": f"send JSON with a 'question' field ({exc})"}, 400
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:  # quiet: one line per request is noise here
            pass

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--corpus", type=Path, default=ROOT / "data" / "sample" / "zenml_docs")
    args = parser.parse_args()
    server = make_server(args.port, args.corpus)
    print(f"answering POST http://127.0.0.1:{args.port}/rag (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
