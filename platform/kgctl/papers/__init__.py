"""kgctl.papers: paper input shared by the agent and evaluation (ingested text, the stored
paper text, the file formats of run traces). It sits below both; the pipeline sits above."""
