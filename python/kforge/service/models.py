"""The API's request bodies (pydantic): every field bounded, so that bad input is a 400 that says what to fix."""

from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KernelBenchTask(Strict):
    kind: Literal["kernelbench"]
    problem: str = Field(..., min_length=1, max_length=300,
                         description="a problem file under one of the server's problem roots, e.g. level1/19_ReLU.py")


class FileTask(Strict):
    kind: Literal["file"]
    code: str = Field(..., min_length=1, max_length=200_000,
                      description="a KernelBench-format problem: Model, get_inputs(), get_init_inputs()")
    name: str = Field("problem", pattern=r"^[A-Za-z0-9_]{1,80}$")


class DatasetTask(Strict):
    kind: Literal["dataset"]
    dataset: str = Field(..., pattern=r"^[A-Za-z0-9_.-]{1,80}$",
                         description="a dataset the server was started with (--dataset NAME=DIR)")
    row: int = Field(..., ge=0, description="the row of the dataset's index.jsonl, from 0")


class SynthTask(Strict):
    kind: Literal["synth"]
    seed: int = Field(..., ge=0, le=2**31 - 1)
    max_ops: int = Field(3, ge=1, le=8)


TaskSpec = Union[KernelBenchTask, FileTask, DatasetTask, SynthTask]


class CreateSession(Strict):
    task: TaskSpec = Field(..., discriminator="kind")
    mode: Literal["skill", "llm"] = "skill"
    protocol: Literal["cuda-agent", "kernelbench"] = "cuda-agent"
    max_turns: int = Field(150, ge=1, le=1000)


class Step(Strict):
    action: int = Field(..., ge=0, le=100_000, description="an id from the observation's `actions`")
    evaluate: bool = Field(True, description="false: an edit, evaluated only when the episode ends")


class Submit(Strict):
    model_new: str = Field(..., min_length=1, max_length=500_000, description="the source of a file defining ModelNew")
    profile: bool = True
