"""The dual-encoder trainer: ECoRAG's evidentiality ranker as InfoNCE over a sentence encoder.

Two modes (``encoder``): ``"frozen"`` (the default, below) trains a linear head on the frozen
encoder's embeddings; ``"lora"`` fine-tunes the encoder itself with a LoRA adapter on its top
``train_layers`` layers (:mod:`ragsift.trainers.dual_encoder_lora`), with the same batches, loss,
labels and schedule.

ECoRAG fine-tunes Contriever with InfoNCE so that strong evidence ranks above weak evidence and
distractors, weak evidence making up a share (0.15) of the negatives. Here the encoder stays
frozen and a linear head on its embeddings is trained instead (:mod:`ragsift.scorers.embedding_head`:
a sentence-transformers ``Dense`` with a residual, starting as the identity, so step 0 is the
zero-shot encoder). Why: every text is encoded once and cached, so a step costs microseconds
rather than an encoder forward and backward pass, which fits a CPU (MiniLM encodes about 12
sentences per second on the shared 2-core machine), and the artefact is a few hundred KB instead
of a whole encoder.

Per step, ``batch_size`` distinct training questions (seeded by ``seed`` and the step, so a resumed
run repeats an uninterrupted one); per question one strong sentence (the positive) and
``negatives`` hard negatives from the same question, each a weak sentence with probability
``weak_ratio`` (else a distractor; the other kind when a question has none of one). The loss is
sentence-transformers' ``MultipleNegativesRankingLoss`` (InfoNCE with cosine similarity times
``scale``) over the question's positive, its hard negatives and every other row's positive and
negatives (in-batch negatives).

Labels: records of the config's ``[labeler]`` (default ``gold-evidentiality``: supporting facts as
strong, other sentences of their documents as weak, other documents' sentences as distractors;
the reader-mined ``evidentiality`` labeler gives the same kinds). Records of other labelers map
``label = true`` to strong, kind ``weak`` / ``hard_negative`` to weak and the rest to distractors.

Checkpoints: the texts encoded so far with their embeddings (``checkpoint/embeddings``, every
``checkpoint_every`` encoder batches) and the head with its AdamW state (``checkpoint/head``,
every ``checkpoint_every`` steps); ``--resume`` continues either phase. A resumed run encodes only
the texts the checkpoint lacks, so one encoding serves several runs with other hyper-parameters
(copy ``checkpoint/embeddings`` into a new output folder and pass ``--resume``). The development questions are
scored from the same cached embeddings with the head applied exactly as the ``dual-encoder``
scorer applies it; their zero-shot scores (no head) are reported beside them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ragsift.errors import ConfigError
from ragsift.models import OFFLINE_MINILM
from ragsift.output_files import write_text_atomically
from ragsift.plugin import Params
from ragsift.registry import build_plugin
from ragsift.scorers.dual_encoder import DualEncoderScorer
from ragsift.scorers.embedding_head import new_head, save_head
from ragsift.trainers.base import DevPredictions, Trainer, TrainingJob, TrainingResult, sentence_kinds
from ragsift.trainers.checkpoint import read_json_state, read_saved, run_steps, save_tensors

__all__ = ["DualEncoderTrainer", "DualEncoderTrainerParams", "HEAD_FOLDER"]

DEFAULT_LABELER = {"name": "gold-evidentiality", "max_weak": 4, "max_distractors": 6}
HEAD_FOLDER = "head"
_WEAK_KINDS = ("weak", "hard_negative")


class DualEncoderTrainerParams(Params):
    #: the frozen sentence encoder (the scorer's ``model``): Hub id, folder or package path
    base_model: str = OFFLINE_MINILM
    pooling: Literal["auto", "mean", "cls"] = "auto"
    max_length: int | None = Field(None, ge=1)
    query_prefix: str = ""
    sentence_prefix: str = ""
    #: where the encoder runs (the head itself trains on CPU: its steps are tiny)
    device: str = "auto"
    #: texts per encoder batch (a checkpoint every ``checkpoint_every`` batches while encoding)
    encode_batch_size: int = Field(64, ge=1)
    steps: int = Field(300, ge=1)
    #: questions per step (ECoRAG: 64)
    batch_size: int = Field(64, ge=2)
    #: hard negatives per question per step
    negatives: int = Field(4, ge=1)
    #: share of the hard negatives drawn from weak evidence (ECoRAG: 0.15)
    weak_ratio: float = Field(0.15, ge=0, le=1)
    learning_rate: float = Field(1e-3, gt=0)
    #: AdamW weight decay on the head (pulls it towards the identity, i.e. the zero-shot encoder)
    weight_decay: float = Field(0.01, ge=0)
    #: InfoNCE scale (1 / temperature) on cosine similarities, as sentence-transformers' default
    scale: float = Field(20.0, gt=0)
    #: score only the first N development questions for the report (every sentence; CPU cost)
    dev_questions: int | None = Field(None, ge=1)
    #: development loss every N steps (and the top-``eval_k`` recall, when set, in the lora mode)
    eval_every: int = Field(1, ge=1)
    eval_k: int | None = Field(None, ge=1, le=10)
    #: "frozen": a linear head on the frozen encoder; "lora": a LoRA adapter on the encoder's top layers
    encoder: Literal["frozen", "lora"] = "frozen"
    #: lora mode: how many of the encoder's top layers get the adapter (the rest run once, cached)
    train_layers: int = Field(1, ge=1)
    lora_r: int = Field(8, ge=1)
    lora_alpha: float = Field(16.0, gt=0)
    lora_dropout: float = Field(0.1, ge=0, lt=1)
    #: module names the adapter wraps (BERT: attention query / key / value and the three dense layers)
    lora_targets: list[str] = Field(default_factory=lambda: ["query", "key", "value", "dense"], min_length=1)


@dataclass
class _Question:
    query: int  # row of the query embedding
    strong: list[int] = field(default_factory=list)
    weak: list[int] = field(default_factory=list)
    distractor: list[int] = field(default_factory=list)


class _Texts:
    """Unique texts to encode, by role (a query and a sentence with the same text differ when prefixed)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []
        self._index: dict[tuple[str, str], int] = {}

    def add(self, role: str, text: str) -> int:
        key = (role, text)
        if key not in self._index:
            self._index[key] = len(self.items)
            self.items.append(key)
        return self._index[key]


@dataclass
class _TrainingSet:
    """What both modes train on: the labeler's records, the questions built from them (rows into
    ``texts``) and the label counts."""
    records: list[Any]
    questions: list[_Question]
    counts: dict[str, int]
    labeler: Any
    texts: _Texts


def _rows(questions: Sequence[_Question], key: list[int], batch_size: int, negatives: int,
          weak_ratio: float) -> np.ndarray:
    """Embedding rows of one batch drawn by the generator seeded with ``key``:
    ``[questions, 2 + negatives]`` (query, positive, hard negatives)."""
    rng = np.random.default_rng(key)
    chosen = rng.choice(len(questions), size=min(batch_size, len(questions)), replace=False)
    out = np.empty((len(chosen), 2 + negatives), dtype=np.int64)
    for row, qi in enumerate(chosen):
        q = questions[int(qi)]
        out[row, 0] = q.query
        out[row, 1] = q.strong[int(rng.integers(len(q.strong)))]
        for slot in range(negatives):
            weak = bool(q.weak) and (rng.random() < weak_ratio or not q.distractor)
            pool = q.weak if weak else q.distractor
            out[row, 2 + slot] = pool[int(rng.integers(len(pool)))]
    return out


class DualEncoderTrainer(Trainer):
    """Trains a linear head on a frozen dual encoder with InfoNCE (see the module docstring)."""

    Params = DualEncoderTrainerParams
    extras: ClassVar[tuple[str, ...]] = ("models", "train")
    uses_labeler: ClassVar[bool] = True

    def _base_scorer(self) -> DualEncoderScorer:
        p = self.params
        return DualEncoderScorer(model=p.base_model, pooling=p.pooling, similarity="cosine", batch_size=p.encode_batch_size,
                                 max_length=p.max_length, query_prefix=p.query_prefix, sentence_prefix=p.sentence_prefix,
                                 device=p.device)

    def scorer_spec(self, head: str | None = None, adapter: str | None = None) -> dict[str, Any]:
        """The ``dual-encoder`` scorer config that loads the trained head or adapter."""
        p = self.params
        return {"name": "dual-encoder", "model": p.base_model, "pooling": p.pooling, "similarity": "cosine",
                **({"head": head} if head else {}), **({"adapter": adapter} if adapter else {}),
                "query_prefix": p.query_prefix, "sentence_prefix": p.sentence_prefix,
                **({"max_length": p.max_length} if p.max_length else {})}

    def _embeddings(self, job: TrainingJob, scorer: DualEncoderScorer, texts: _Texts) -> tuple[np.ndarray, int]:
        """Embeddings of every text (rows in ``texts`` order) and how many were read from the checkpoint.

        The checkpoint keeps the texts with their embeddings, so a resumed run (even with other
        data or development questions, the same encoder settings) encodes only texts it lacks."""
        from safetensors.numpy import load_file, save_file

        p = self.params
        folder = job.checkpoint_dir / "embeddings"
        settings = {"model": p.base_model, "pooling": p.pooling, "max_length": p.max_length, "query_prefix": p.query_prefix,
                    "sentence_prefix": p.sentence_prefix}
        known: dict[tuple[str, str], np.ndarray] = {}
        if job.resume and (folder / "state.json").is_file():
            state = read_json_state(folder / "state.json", folder)
            if state.get("encoder") != settings:
                raise ConfigError(f"{folder}: the checkpoint holds embeddings of another encoder ({state.get('encoder')}); "
                                  "use a new --output.")
            stored = read_saved(folder / "embeddings.safetensors", load_file, folder)["embeddings"]
            known = {(role, text): row for (role, text), row in zip(state["texts"], stored, strict=True)}
        reused = sum(item in known for item in texts.items)
        missing = [item for item in texts.items if item not in known]
        size = p.encode_batch_size
        starts = range(0, len(missing), size)
        with job.progress_bar(len(starts), "embeddings") as bar:
            for n, start in enumerate(starts, 1):
                chunk = missing[start : start + size]
                queries = [t for role, t in chunk if role == "q"]
                sentences = [t for role, t in chunk if role == "s"]
                encoded = iter(scorer.embed_queries(queries)) if queries else iter(())
                encoded_s = iter(scorer.embed_sentences(sentences)) if sentences else iter(())
                for item in chunk:
                    known[item] = np.asarray(next(encoded if item[0] == "q" else encoded_s), dtype=np.float32)
                bar.update(1)
                if n % job.checkpoint_every == 0 or n == len(starts):
                    folder.mkdir(parents=True, exist_ok=True)
                    (folder / "state.json").unlink(missing_ok=True)  # no old state beside new embeddings
                    save_tensors(folder / "embeddings.safetensors", {"embeddings": np.stack(list(known.values()))}, save_file)
                    write_text_atomically(folder / "state.json", json.dumps({"encoder": settings, "texts": list(known)}))
        return np.stack([known[item] for item in texts.items]), reused

    def _train_questions(self, records: list[Any], texts: _Texts) -> tuple[list[_Question], dict[str, int]]:
        by_question: dict[tuple[str, str], _Question] = {}
        counts = {"strong": 0, "weak": 0, "distractor": 0}
        for r in records:
            key = (r.example_id, r.query)
            if key not in by_question:
                by_question[key] = _Question(texts.add("q", r.query))
            kind = "strong" if r.label else "weak" if r.kind in _WEAK_KINDS else "distractor"
            getattr(by_question[key], kind).append(texts.add("s", r.sentence))
            counts[kind] += 1
        usable = [q for q in by_question.values() if q.strong and (q.weak or q.distractor)]
        return usable, {**counts, "questions": len(by_question), "usable_questions": len(usable)}

    def train(self, job: TrainingJob) -> TrainingResult:
        import torch
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

        p = self.params
        labeler, records = self.labelled(job, DEFAULT_LABELER, both=False)
        texts = _Texts()
        questions, counts = self._train_questions(records, texts)
        if len(questions) < 2:
            raise ConfigError("DualEncoderTrainer: fewer than two training questions with a strong sentence and a negative; "
                              "check the training data and the labeler.")
        splitter = build_plugin("splitter", {"name": "presplit", "fallback": "sentencizer"}, "DualEncoderTrainer")
        dev_examples = job.dev[: p.dev_questions] if p.dev_questions else job.dev
        dev_items = []
        for example in dev_examples:
            sentences = splitter.split_all(example.documents)
            labels, kinds = sentence_kinds(example, sentences)
            dev_items.append((example, texts.add("q", example.question), [texts.add("s", s.text) for s in sentences], labels, kinds))
        dev_questions = [_Question(q, [i for i, y in zip(s, labels, strict=True) if y],
                                   [i for i, k in zip(s, kinds, strict=True) if k == "hard_negative"],
                                   [i for i, k in zip(s, kinds, strict=True) if k == "distractor_negative"])
                         for _, q, s, labels, kinds in dev_items]
        dev_questions = [q for q in dev_questions if q.strong and (q.weak or q.distractor)]
        dev_rows = [_rows(dev_questions, [job.seed, 1, b], p.batch_size, p.negatives, p.weak_ratio)
                    for b in range(max(1, len(dev_questions) // p.batch_size))] if len(dev_questions) >= 2 else []
        data = _TrainingSet(records, questions, counts, labeler, texts)
        if p.encoder == "lora":
            return self._train_lora(job, data, dev_rows, dev_items)
        cached, reused = self._embeddings(job, self._base_scorer(), texts)
        embeddings = torch.from_numpy(cached)

        torch.manual_seed(job.seed)
        head = new_head(int(embeddings.shape[1]))
        loss_model = MultipleNegativesRankingLoss(SentenceTransformer(modules=[head], device="cpu"), scale=p.scale)
        optimizer = torch.optim.AdamW(head.parameters(), lr=p.learning_rate, weight_decay=p.weight_decay)

        def batch_loss(rows: np.ndarray) -> Any:
            columns = [head({"sentence_embedding": embeddings[torch.from_numpy(rows[:, c])]})["sentence_embedding"]
                       for c in range(rows.shape[1])]
            return loss_model.compute_loss_from_embeddings(columns, torch.empty(0))  # labels unused by MNRL

        def dev_loss() -> dict[str, float]:
            if not dev_rows:
                return {}
            with torch.no_grad():
                return {"dev_loss": float(np.mean([batch_loss(r).item() for r in dev_rows]))}

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # the head's products are tiny: more threads only wait on each other (10-30x slower under load)
        try:
            history = run_steps(job, p, job.checkpoint_dir / "head", head, optimizer,
                                lambda step: batch_loss(_rows(questions, [job.seed, 0, step], p.batch_size, p.negatives,
                                                              p.weak_ratio)),
                                dev_loss, "dual-encoder")
        finally:
            torch.set_num_threads(threads)
        head.eval()
        save_head(head, job.output / HEAD_FOLDER)
        trained, zero_shot = self._dev_predictions(head, embeddings.numpy(), dev_items)
        return self._result(job, data, [f"{HEAD_FOLDER}/config.json", f"{HEAD_FOLDER}/model.safetensors"], history,
                            trained, zero_shot, reused, self.scorer_spec(head=str(job.output / HEAD_FOLDER)))

    def _train_lora(self, job: TrainingJob, data: _TrainingSet, dev_rows: list[np.ndarray],
                    dev_items: list[Any]) -> TrainingResult:
        from ragsift.trainers.dual_encoder_lora import ADAPTER_FOLDER, EncoderLoraFit

        p = self.params
        fit = EncoderLoraFit(p, job, self._base_scorer())
        reused = fit.cache_states(data.texts.items)
        history = fit.fit(lambda key: _rows(data.questions, key, p.batch_size, p.negatives, p.weak_ratio), dev_rows, dev_items)
        artefacts = fit.save()
        trained, zero_shot = fit.dev_predictions(dev_items), fit.dev_predictions(dev_items, adapter=False)
        result = self._result(job, data, artefacts, history, trained, zero_shot, reused,
                              self.scorer_spec(adapter=str(job.output / ADAPTER_FOLDER)))
        result.extra["trained_layers"] = list(range(fit.start, fit.start + p.train_layers))
        result.extra["adapter_parameters"] = sum(w.numel() for w in fit.model.parameters() if w.requires_grad)
        return result

    def _result(self, job: TrainingJob, data: _TrainingSet, artefacts: list[str], history: list[dict[str, float]],
                trained: DevPredictions | None, zero_shot: DevPredictions | None, reused: int,
                scorer: dict[str, Any]) -> TrainingResult:
        p, counts, labeler, questions = self.params, data.counts, data.labeler, data.questions
        extra: dict[str, Any] = {"label_counts": counts, "texts": len(data.texts.items), "texts_from_checkpoint": reused}
        if zero_shot is not None:
            from ragsift.trainers.selection import selection_curves

            curves = selection_curves(zero_shot)
            extra["zero_shot_dev"] = {"top_k": curves["top_k"], "best_k": curves["best_k"]}
        return TrainingResult(
            artefacts=artefacts,
            history=history,
            dev=trained,
            hyperparameters={**self.config(), "seed": job.seed, "training_records": len(data.records),
                             "training_questions": len(questions),
                             "epochs": round(p.steps * min(p.batch_size, len(questions)) / len(questions), 3)},
            base_model=p.base_model,
            labels=f"{self.labels_text(labeler)}: {counts['strong']} strong, {counts['weak']} weak, {counts['distractor']} distractor",
            scorer=scorer,
            extra=extra,
        )

    def _dev_predictions(self, head: Any, embeddings: np.ndarray,
                         items: list[Any]) -> tuple[DevPredictions | None, DevPredictions | None]:
        """The development sentences' scores with the head (as the scorer computes them) and without."""
        from ragsift.scorers.embedding_head import apply_head

        if not items:
            return None, None
        scorer = self._base_scorer()
        trained, zero_shot = DevPredictions(), DevPredictions()
        for example, q, rows, labels, kinds in items:
            raw_q, raw_s = embeddings[q], embeddings[rows]
            trained.add(example.id, scorer.similarities(apply_head(head, raw_q[None])[0], apply_head(head, raw_s)), labels, kinds)
            zero_shot.add(example.id, scorer.similarities(raw_q, raw_s), labels, kinds)
        return trained, zero_shot
