-- An Nsight Systems SQLite export of one `nsys profile` over a launcher that started two ranks
-- (two processes, one GPU each), written by hand in the schema of `nsys export --type sqlite` (the
-- SQLite Export Schema Reference; the same subset of columns as nsys_rank.sql). globalPid / globalTid
-- hold the process id above their low 24 bits (pid x 0x1000000, + the thread id for globalTid), as
-- the export documents. CUDA correlation ids are per process: both processes use 1, 2 and 3.
-- The NVTX ranges are those PyTorch's NVTX profiler pushes under
-- torch.autograd.profiler.emit_nvtx(record_shapes=True): "<op>, seq = N[, op_id = N], sizes = [...]".
-- Process 2000 on GPU 0 (rank 0 by GPU order), process 1000 on GPU 1 (rank 1). Times in nanoseconds.
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, gridX INTEGER NOT NULL, blockX INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER);
INSERT INTO StringIds VALUES
  (1, 'void sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_execute_kernel(...)'),
  (2, 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)'),
  (3, 'nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN'),
  (4, 'ampere_sgemm_128x64_tn'),
  (5, 'cudaLaunchKernel_v7000'),
  (6, 'aten::addmm, seq = 7, op_id = 12, sizes = [[4096], [4096, 1024], [1024, 4096], [], []], input_op_ids = [(0, 0)]');
-- Rank 0 (pid 2000, GPU 0): an addmm GEMM [1000, 2000), an all-reduce [2000, 3000), and a GEMM
-- launched outside any op range [3000, 3500) (its shape unknown).
-- Rank 1 (pid 1000, GPU 1): an mm GEMM [1000, 1600), an all-reduce [1200, 2600) (400 ns hidden).
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (1000, 2000, 0, 1, 7, 1, 33554432000, 1, 1, 132, 384),
  (2000, 3000, 0, 1, 20, 2, 33554432000, 2, 2, 24, 640),
  (3000, 3500, 0, 1, 7, 3, 33554432000, 3, 3, 132, 384),
  (1000, 1600, 1, 1, 7, 1, 16777216000, 4, 4, 64, 256),
  (1200, 2600, 1, 1, 20, 2, 16777216000, 2, 2, 24, 640);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (400, 420, 0, 33554434000, 1, 5, 0),
  (950, 960, 0, 33554434000, 2, 5, 0),
  (970, 980, 0, 33554434000, 3, 5, 0),
  (200, 220, 0, 16777217000, 1, 5, 0),
  (600, 620, 0, 16777217000, 2, 5, 0);
-- Rank 0: aten::linear encloses aten::t (no launch) and aten::addmm (textId), which encloses launch 1.
-- Rank 1: aten::mm encloses launch 1; a step range on its thread.
INSERT INTO NVTX_EVENTS VALUES
  (100, 900, 59, NULL, NULL, NULL, 'aten::linear, seq = 5, op_id = 10, sizes = [[8, 512, 1024], [4096, 1024], [4096]]', 33554434000, NULL, NULL, 0),
  (150, 200, 59, NULL, NULL, NULL, 'aten::t, seq = 6, op_id = 11, sizes = [[4096, 1024]]', 33554434000, NULL, NULL, 0),
  (300, 800, 59, NULL, NULL, NULL, NULL, 33554434000, NULL, 6, 0),
  (100, 500, 59, NULL, NULL, NULL, 'aten::mm, seq = 1, sizes = [[256, 512], [512, 128]]', 16777217000, NULL, NULL, 0),
  (50, 1000, 59, NULL, NULL, NULL, 'ProfilerStep#3', 16777217000, NULL, NULL, 0);
