"""A planned launch written out for where it runs: the flag line for `$(...)`, a shell command,
an env file, `docker run`, docker compose or a Kubernetes Deployment. Every format carries the
model exactly as the user named it, the flags as argv words and the environment the launch
needs, quoted so that its reader gives each back exactly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._quoting import (
    check_env_name,
    check_text,
    env_line,
    shell_join,
    shell_word,
    substitution_words,
    yaml_list,
    yaml_map,
    yaml_string,
)
from .deployment import Deployment, compose_bytes, k8s_quantity

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
    resources: Deployment | None = None,
) -> str:
    """The launch in format `fmt` (args, shell, env, docker, compose, k8s), quoted for the
    program that reads it (see _quoting); a value a format cannot carry is refused naming one
    that can. `resources` (deployment.py) sizes compose's and k8s's GPU resource, memory and
    /dev/shm from the plan."""
    check_text(model, "the model")
    for word in argv:
        check_text(word, "the flag word")
    for name, value in env.items():
        check_env_name(name)
        check_text(value, f"the environment variable {name}")
    words = ["--model", model, *argv]
    if fmt == "args":
        return substitution_words(argv)
    if fmt == "shell":
        prefix = "".join(f"{k}={shell_word(v)} " for k, v in env.items())
        return prefix + shell_join(["vllm", "serve", model, *argv])
    if fmt == "env":
        return "\n".join(env_line(k, v) for k, v in env.items())
    if fmt == "docker":
        parts = ["docker", "run", "--rm", "--gpus", f"count={gpus}" if gpus else "all"]
        parts += ["--ipc=host", "-p", f"{PORT}:{PORT}"]
        quoted = [shell_word(p) for p in parts]
        # Left unquoted so that the shell running the line expands it.
        quoted += ["-v", "${HOME}/.cache/huggingface:/root/.cache/huggingface"]
        for k, v in env.items():
            quoted += ["-e", shell_word(f"{k}={v}")]
        quoted.append(shell_word(_image(engine_version)))
        return " ".join(quoted + [shell_word(w) for w in words])
    if fmt == "compose":
        return _compose(words, env, engine_version, gpus, resources)
    if fmt == "k8s":
        return _k8s(words, env, engine_version, gpus, resources)
    msg = f"unknown format {fmt!r}"
    raise ValueError(msg)


def _compose(
    words: Sequence[str],
    env: Mapping[str, str],
    engine_version: str,
    gpus: int,
    resources: Deployment | None,
) -> str:
    # docker ignores shm_size under `ipc: host`: a sized /dev/shm replaces the host's.
    if resources is not None and resources.shm_bytes > 0:
        ipc = f"    shm_size: {compose_bytes(resources.shm_bytes)}"
    else:
        ipc = "    ipc: host"
    lines = [
        "services:",
        "  vllm:",
        f"    image: {yaml_string(_image(engine_version))}",
        ipc,
        f'    ports: ["{PORT}:{PORT}"]',
        '    volumes: ["${HOME}/.cache/huggingface:/root/.cache/huggingface"]',
        f"    command: {yaml_list(words)}",
    ]
    if env:
        lines.append(f"    environment: {yaml_map(env)}")
    lines += [
        "    deploy:",
        "      resources:",
        "        reservations:",
        "          devices:",
        f'            - {{driver: nvidia, count: {gpus or 1}, capabilities: ["gpu"]}}',
    ]
    if resources is not None:
        memory = compose_bytes(resources.host_memory_request_bytes)
        lines += [f"    mem_limit: {memory}", f"    mem_reservation: {memory}"]
    return "\n".join(lines)


def _k8s(
    words: Sequence[str],
    env: Mapping[str, str],
    engine_version: str,
    gpus: int,
    resources: Deployment | None,
) -> str:
    env_items = ", ".join(
        f"{{name: {yaml_string(k, interpolated=False)}, value: {yaml_string(v)}}}"
        for k, v in env.items()
    )
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
        f"          image: {yaml_string(_image(engine_version), interpolated=False)}",
        f"          args: {yaml_list(words)}",
        f"          env: [{env_items}]",
        f"          ports: [{{containerPort: {PORT}}}]",
        f"          resources: {_k8s_resources(gpus, resources)}",
        "          volumeMounts: [{name: shm, mountPath: /dev/shm}]",
        f"      volumes: [{{name: shm, emptyDir: {_k8s_shm(resources)}}}]",
    ]
    return "\n".join(lines)


def _k8s_resources(gpus: int, resources: Deployment | None) -> str:
    """A GPU (or MIG slice) limit, and memory request = limit sized from the plan: extended
    resources such as nvidia.com/gpu are set as limits only."""
    if resources is None:
        return f"{{limits: {{nvidia.com/gpu: {gpus or 1}}}}}"
    memory = k8s_quantity(resources.host_memory_request_bytes)
    return (
        f"{{requests: {{memory: {memory}}}, "
        f"limits: {{{resources.gpu_resource}: {resources.gpu_count}, memory: {memory}}}}}"
    )


def _k8s_shm(resources: Deployment | None) -> str:
    if resources is None or resources.shm_bytes == 0:
        return "{medium: Memory}"
    return f"{{medium: Memory, sizeLimit: {k8s_quantity(resources.shm_bytes)}}}"
