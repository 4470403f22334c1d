"""A self-hosted rerank API in the shape text-embeddings-inference, Jina and Cohere share,
serving a local cross-encoder folder: for trying ``rerank=http`` and its cost columns
without an account.

    python benchmarks/_rerank_server.py /tmp/tiny-cross 8089
    receval rerank=http rerank.base_url=http://127.0.0.1:8089 rerank.model=tiny \\
        +cost.rerank.per_1k_requests=2 +cost.rerank.per_1m_input_tokens=50

``POST /rerank {model, query, documents, top_n}`` -> ``{"results": [{"index",
"relevance_score"}], "usage": {"total_tokens"}}`` (tokens counted by the model's tokenizer).
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(folder: str, port: int) -> None:
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(folder, device="cpu", local_files_only=True)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            pairs = [(body["query"], document) for document in body["documents"]]
            scores = model.predict(pairs, batch_size=32, show_progress_bar=False) if pairs else []
            results = sorted(
                ({"index": i, "relevance_score": float(s)} for i, s in enumerate(scores)),
                key=lambda r: -r["relevance_score"],
            )[: body.get("top_n") or len(pairs)]
            tokens = sum(len(model.tokenizer(q, d, truncation=True)["input_ids"]) for q, d in pairs)
            raw = json.dumps({"results": results, "usage": {"total_tokens": tokens}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args):
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 8089)
