from fairplace.runs.strategyproofness import strategyproofness, tipping_point

df = strategyproofness(xs=[0, 20, 35, 50, 80], seeds=range(5))
df.to_csv("/tmp/i10/sp.csv", index=False)
m = df.groupby("X")[
    ["liar_completion", "others_avg_completion", "liar_mean_payment", "liar_dense_share"]
].agg(["mean", "std"])
print(m.round(3).to_string())
print("tipping", tipping_point(df))
