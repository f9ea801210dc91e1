"""A planned launch written out for where it runs: the flag line for `$(...)`, a shell command,
an env file, `docker run`, docker compose or a Kubernetes Deployment. Every format carries the
model exactly as the user named it, the flags as argv words and the environment the launch
needs."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence

# vLLM's published server image; its tag is the release planned for.
IMAGE = "vllm/vllm-openai"
PORT = 8000


def _image(engine_version: str) -> str:
    return f"{IMAGE}:v{engine_version}"


def render_launch(
    fmt: str,
    *,
    model: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    engine_version: str,
    gpus: int,
) -> str:
    """The launch in format `fmt` (args, shell, env, docker, compose, k8s)."""
    words = ["--model", model, *argv]
    if fmt == "args":
        # Word splitting of $(...) keeps each word whole: none holds whitespace.
        return " ".join(argv)
    if fmt == "shell":
        prefix = "".join(f"{k}={shlex.quote(v)} " for k, v in env.items())
        return prefix + shlex.join(["vllm", "serve", model, *argv])
    if fmt == "env":
        return "\n".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    if fmt == "docker":
        parts = ["docker", "run", "--rm", "--gpus", f"count={gpus}" if gpus else "all"]
        parts += ["--ipc=host", "-p", f"{PORT}:{PORT}"]
        parts += ["-v", "${HOME}/.cache/huggingface:/root/.cache/huggingface"]
        for k, v in env.items():
            parts += ["-e", f"{k}={v}"]
        parts.append(_image(engine_version))
        quoted = [p if p.startswith("${HOME}") else shlex.quote(p) for p in parts]
        return " ".join(quoted[:-1] + [quoted[-1]] + [shlex.quote(w) for w in words])
    if fmt == "compose":
        lines = [
            "services:",
            "  vllm:",
            f"    image: {json.dumps(_image(engine_version))}",
            "    ipc: host",
            f'    ports: ["{PORT}:{PORT}"]',
            '    volumes: ["${HOME}/.cache/huggingface:/root/.cache/huggingface"]',
            f"    command: {json.dumps(words)}",
        ]
        if env:
            lines.append(f"    environment: {json.dumps(dict(env))}")
        lines += [
            "    deploy:",
            "      resources:",
            "        reservations:",
            "          devices:",
            f'            - {{driver: nvidia, count: {gpus or 1}, capabilities: ["gpu"]}}',
        ]
        return "\n".join(lines)
    if fmt == "k8s":
        env_items = [{"name": k, "value": v} for k, v in env.items()]
        lines = [
            "apiVersion: apps/v1",
            "kind: Deployment",
            "metadata: {name: vllm}",
            "spec:",
            "  replicas: 1",
            "  selector: {matchLabels: {app: vllm}}",
            "  template:",
            "    metadata: {labels: {app: vllm}}",
            "    spec:",
            "      containers:",
            "        - name: vllm",
            f"          image: {json.dumps(_image(engine_version))}",
            f"          args: {json.dumps(words)}",
            f"          env: {json.dumps(env_items)}",
            f"          ports: [{{containerPort: {PORT}}}]",
            f"          resources: {{limits: {{nvidia.com/gpu: {gpus or 1}}}}}",
            "          volumeMounts: [{name: shm, mountPath: /dev/shm}]",
            "      volumes: [{name: shm, emptyDir: {medium: Memory}}]",
        ]
        return "\n".join(lines)
    msg = f"unknown format {fmt!r}"
    raise ValueError(msg)
